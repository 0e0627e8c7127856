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

import COpenSSL

/// A message digest algorithm offered by the system OpenSSL.
public enum DigestAlgorithm: String, Sendable, CaseIterable {
    case md5 = "MD5"
    case sha1 = "SHA1"
    case sha256 = "SHA256"
    case sha512 = "SHA512"

    /// Digest length in bytes.
    public var length: Int {
        switch self {
        case .md5: 16
        case .sha1: 20
        case .sha256: 32
        case .sha512: 64
        }
    }

    /// The fetched OpenSSL implementation, looked up once per process.
    var evpMD: OpaquePointer {
        switch self {
        case .md5: FetchedDigests.md5
        case .sha1: FetchedDigests.sha1
        case .sha256: FetchedDigests.sha256
        case .sha512: FetchedDigests.sha512
        }
    }
}

/// Explicitly fetched digests: fetching once avoids OpenSSL 3's per-call implicit fetch.
private enum FetchedDigests {
    // EVP_MD objects are immutable and thread-safe once fetched.
    nonisolated(unsafe) static let md5 = fetch("MD5")
    nonisolated(unsafe) static let sha1 = fetch("SHA1")
    nonisolated(unsafe) static let sha256 = fetch("SHA256")
    nonisolated(unsafe) static let sha512 = fetch("SHA512")

    private static func fetch(_ name: String) -> OpaquePointer {
        guard let md = EVP_MD_fetch(nil, name, nil) else {
            // The default provider always carries these; a system without them cannot run ipnd at all.
            fatalError("OpenSSL has no \(name) implementation: \(OpenSSLError.lastMessage())")
        }
        return md
    }
}

/// The thin wrapper over the system OpenSSL 3: digests, HMAC, RSA-SHA256, constant-time compare.
public enum Crypto {
    /// Digest of the concatenation of `parts`, without copying them together.
    public static func digest(_ algorithm: DigestAlgorithm, _ parts: [UInt8]...) -> [UInt8] {
        digest(algorithm, parts: parts)
    }

    /// Digest of the concatenation of `parts`, without copying them together.
    public static func digest(_ algorithm: DigestAlgorithm, parts: [[UInt8]]) -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new failed: out of memory") }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestInit_ex2(ctx, algorithm.evpMD, nil) == 1 else {
            fatalError("EVP_DigestInit_ex2(\(algorithm.rawValue)) failed: \(OpenSSLError.lastMessage())")
        }
        for part in parts {
            part.withUnsafeBytes { buffer in
                _ = EVP_DigestUpdate(ctx, buffer.baseAddress, buffer.count)
            }
        }
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        EVP_DigestFinal_ex(ctx, &out, &length)
        out.removeSubrange(Int(length)...)
        return out
    }

    /// HMAC of `data` with `key`.
    public static func hmac(_ algorithm: DigestAlgorithm, key: [UInt8], data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length = 0
        let result = key.withUnsafeBytes { keyBuffer in
            data.withUnsafeBytes { dataBuffer in
                EVP_Q_mac(
                    nil, "HMAC", nil, algorithm.rawValue, nil,
                    // OpenSSL rejects a NULL key pointer even for an empty key.
                    keyBuffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), keyBuffer.count,
                    dataBuffer.baseAddress.map { $0.assumingMemoryBound(to: UInt8.self) }, dataBuffer.count,
                    &out, out.count, &length
                )
            }
        }
        guard result != nil else {
            fatalError("HMAC-\(algorithm.rawValue) failed: \(OpenSSLError.lastMessage())")
        }
        out.removeSubrange(length...)
        return out
    }

    /// Compares two byte strings in time independent of where they differ (`CRYPTO_memcmp`).
    /// Strings of different lengths are unequal; their length is not secret.
    public static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBytes { aBuffer in
            b.withUnsafeBytes { bBuffer in
                CRYPTO_memcmp(aBuffer.baseAddress, bBuffer.baseAddress, a.count) == 0
            }
        }
    }

    /// Compares a received hex digest with the expected digest bytes, ignoring the hex case,
    /// in constant time. Malformed hex is simply unequal.
    public static func hexDigestMatches(_ receivedHex: String, expected: [UInt8]) -> Bool {
        guard let received = Hex.decode(receivedHex) else { return false }
        return constantTimeEquals(received, expected)
    }
}

/// The most recent OpenSSL error on this thread, as text.
enum OpenSSLError {
    static func lastMessage() -> String {
        let code = ERR_get_error()
        guard code != 0 else { return "unknown OpenSSL error" }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        ERR_clear_error()
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
