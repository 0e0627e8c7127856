import Hummingbird
import IPNCore
import NIOCore

/// The request context of both listeners: Hummingbird's core storage plus the peer address.
public struct IPNRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The TCP peer (the client, or the TLS proxy in front of ipnd).
    public let peerAddress: IPAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peerAddress = source.channel.remoteAddress?.ipAddress.flatMap(IPAddress.init)
    }
}
