import ArgumentParser
import Foundation
import IPNCore
import NIOCore
import NIOHTTP1
import NIOPosix

/// `ipnd-bench receive`: the merchant's application at its fastest, for `make bench`'s delivery
/// passes: answers every POST 204 and counts it (signatures are not checked here: the test
/// suite checks them with the Standard Webhooks library). `GET /count` answers how many POSTs
/// it has answered and how many distinct webhook-ids were among them.
struct BenchReceive: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receive", abstract: "Answer every delivery 204 and count them (GET /count).")

    @Option(help: "The port to listen on, on 127.0.0.1.")
    var port: Int

    func run() async throws {
        let tally = Tally()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 512)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(ReceiverHandler(tally: tally))
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
        print("listening \(port)")
        fflush(nil)
        try await channel.closeFuture.get()
    }
}

/// What the receiver has answered.
final class Tally: Sendable {
    private let state = Locked((posts: 0, ids: Set<String>()))

    func count(_ id: String?) {
        state.withLock { state in
            state.posts += 1
            if let id { state.ids.insert(id) }
        }
    }

    var text: String { state.withLock { "\($0.posts) \($0.ids.count)\n" } }
}

final class ReceiverHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let tally: Tally
    private var head: HTTPRequestHead?

    init(tally: Tally) {
        self.tally = tally
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body:
            break
        case .end:
            guard let head else { return }
            self.head = nil
            if head.method == .GET {
                Self.answer(context, version: head.version, .ok, tally.text)
            } else {
                tally.count(head.headers.first(name: "webhook-id"))
                Self.answer(context, version: head.version, .noContent, "")
            }
        }
    }

    /// Writes a whole answer: head, body (when there is one), end.
    static func answer(
        _ context: ChannelHandlerContext, version: HTTPVersion, _ status: HTTPResponseStatus, _ text: String, contentType: String? = nil
    ) {
        var body = ByteBuffer()
        body.writeString(text)
        var headers = HTTPHeaders()
        if let contentType { headers.add(name: "Content-Type", value: contentType) }
        headers.add(name: "Content-Length", value: String(body.readableBytes))
        context.write(NIOAny(HTTPServerResponsePart.head(HTTPResponseHead(version: version, status: status, headers: headers))), promise: nil)
        if body.readableBytes > 0 { context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(body))), promise: nil) }
        context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)), promise: nil)
    }
}
