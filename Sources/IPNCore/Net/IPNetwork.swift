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

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address as its network-order bytes.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// Parses dotted IPv4 or textual IPv6 (an IPv4-mapped IPv6 address becomes IPv4).
    public init?(_ text: String) {
        var text = Substring(text)
        if text.hasPrefix("["), text.hasSuffix("]") { text = text.dropFirst().dropLast() }
        if let zone = text.firstIndex(of: "%") { text = text[..<zone] }
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, String(text), &v4) == 1 {
            self.init(bytes: withUnsafeBytes(of: &v4) { Array($0) })
        } else if inet_pton(AF_INET6, String(text), &v6) == 1 {
            self.init(bytes: withUnsafeBytes(of: &v6) { Array($0) })
        } else {
            return nil
        }
    }

    /// An address from its 4 (IPv4) or 16 (IPv6) network-order bytes; an IPv4-mapped IPv6
    /// address becomes IPv4.
    public init?(bytes: [UInt8]) {
        switch bytes.count {
        case 4:
            self.bytes = bytes
        case 16:
            let mappedPrefix: [UInt8] = Array(repeating: 0, count: 10) + [0xff, 0xff]
            self.bytes = bytes.prefix(12).elementsEqual(mappedPrefix) ? Array(bytes.suffix(4)) : bytes
        default:
            return nil
        }
    }

    public var isIPv4: Bool { bytes.count == 4 }

    public var description: String {
        // Every stored request names its client: formatted on the stack, without two arrays.
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(INET6_ADDRSTRLEN)) { buffer in
            let family = isIPv4 ? AF_INET : AF_INET6
            guard let out = buffer.baseAddress,
                bytes.withUnsafeBytes({ inet_ntop(family, $0.baseAddress, out, socklen_t(buffer.count)) }) != nil
            else { return "" }
            return String(cString: out)
        }
    }
}

/// A CIDR block such as `10.0.0.0/8` or `2001:db8::/32`; a bare address is a single host.
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    public let address: IPAddress
    public let prefixLength: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(String(parts[0])) else { return nil }
        let maxLength = address.bytes.count * 8
        var length = maxLength
        if parts.count == 2 {
            guard let parsed = Int(parts[1]), (0...maxLength).contains(parsed), parts[1].allSatisfy(\.isASCII) else {
                return nil
            }
            length = parsed
        }
        self.address = address
        self.prefixLength = length
    }

    public func contains(_ candidate: IPAddress) -> Bool {
        guard candidate.bytes.count == address.bytes.count else { return false }
        var remaining = prefixLength
        for (mine, theirs) in zip(address.bytes, candidate.bytes) {
            guard remaining > 0 else { return true }
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            guard mine & mask == theirs & mask else { return false }
            remaining -= bits
        }
        return true
    }

    public var description: String { "\(address)/\(prefixLength)" }
}

extension Sequence<IPNetwork> {
    /// Whether any network in the list holds `address`.
    public func containsAddress(_ address: IPAddress) -> Bool {
        contains { $0.contains(address) }
    }
}
