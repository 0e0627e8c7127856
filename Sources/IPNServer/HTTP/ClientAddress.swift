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

import IPNCore

/// Decides which client address to believe. The TCP peer is the client unless it is a trusted
/// proxy; then `X-Forwarded-For` is read from the right, skipping trusted proxies, and the first
/// untrusted address is the client. Entries a proxy could not have written are not believed.
enum ClientAddress {
    static func resolve(peer: IPAddress?, forwardedFor: [String], trustedProxies: [IPNetwork]) -> IPAddress? {
        guard let peer else { return nil }
        guard trustedProxies.containsAddress(peer) else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: " \t") }
        var client = peer
        for hop in hops.reversed() {
            guard let address = hopAddress(hop) else { return client }
            client = address
            guard trustedProxies.containsAddress(address) else { return address }
        }
        return client
    }

    /// An `X-Forwarded-For` entry's address: a bare address, or one with the port some proxies
    /// add (`192.0.2.1:51234`, `[2001:db8::1]:443`); nil for anything else.
    static func hopAddress(_ hop: String) -> IPAddress? {
        if let address = IPAddress(hop) { return address }
        func isPort(_ text: Substring) -> Bool {
            !text.isEmpty && text.count <= 5 && text.allSatisfy { $0.isASCII && $0.isNumber }
        }
        if hop.first == "[", let close = hop.firstIndex(of: "]") {
            let rest = hop[hop.index(after: close)...]
            guard rest.first == ":", isPort(rest.dropFirst()) else { return nil }
            return IPAddress(String(hop[...close]))
        }
        // IPv4 with a port: exactly one colon (an IPv6 address without brackets has several).
        let parts = hop.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, isPort(parts[1]), let address = IPAddress(String(parts[0])), address.bytes.count == 4 else {
            return nil
        }
        return address
    }
}

extension Substring {
    func trimmingCharacters(in set: String) -> String {
        var result = self
        while let first = result.first, set.contains(first) { result.removeFirst() }
        while let last = result.last, set.contains(last) { result.removeLast() }
        return String(result)
    }
}
