//===----------------------------------------------------------------------===//
//
// This source file is part of the ipnd open source project
//
// Copyright (c) the ipnd authors
// Licensed under Apache License v2.0
//
// See LICENSE for license information
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

import Hummingbird
import IPNCore
import NIOCore

/// The request context of both listeners: Hummingbird's core storage plus the peer address.
public struct IPNRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The TCP peer (the client, or the TLS proxy in front of ipnd).
    public let peerAddress: IPAddress?
    /// The connection, for an answer that must end it (`Response.closingConnection`).
    let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
        peerAddress = source.channel.remoteAddress.flatMap(IPAddress.init(socketAddress:))
    }
}

extension IPAddress {
    /// The address of a socket peer, from its bytes (no text round trip per request).
    init?(socketAddress: SocketAddress) {
        switch socketAddress {
        case .v4(let address):
            var raw = address.address.sin_addr
            self.init(bytes: withUnsafeBytes(of: &raw) { Array($0) })
        case .v6(let address):
            var raw = address.address.sin6_addr
            self.init(bytes: withUnsafeBytes(of: &raw) { Array($0) })
        case .unixDomainSocket:
            return nil
        }
    }
}
