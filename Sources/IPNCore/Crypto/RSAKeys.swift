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

/// Why a key could not be loaded.
public enum KeyError: Error, Equatable, Sendable, CustomStringConvertible {
    case notBase64
    case notAKey(String)
    case notRSA
    case tooSmall(bits: Int)

    /// Smaller RSA keys can be factored; Antom's are 2048 bits.
    public static let minimumBits = 2048

    public var description: String {
        switch self {
        case .notBase64: "is not base64 DER or PEM"
        case .notAKey(let detail): "is not a valid key (\(detail))"
        case .notRSA: "is not an RSA key"
        case .tooSmall(let bits): "is a \(bits)-bit RSA key; at least \(KeyError.minimumBits) bits are required"
        }
    }
}

/// An RSA public key, parsed once and used for PKCS#1 v1.5 SHA-256 verification.
public final class RSAPublicKey: @unchecked Sendable {
    // EVP_PKEY is immutable after parsing; OpenSSL 3 allows concurrent verify operations on it.
    private let pkey: OpaquePointer
    // A verify context set up once (EVP_DigestVerifyInit looks up the signature algorithm and
    // sets up its context: half the cost of the RSA operation itself). Each verification
    // copies it; it is only ever read after init (OpenSSL takes it as const), so concurrent
    // copies are safe.
    private let template: OpaquePointer

    /// Parses a SubjectPublicKeyInfo given as base64 DER or as PEM (`-----BEGIN PUBLIC KEY-----`).
    public init(derOrPEM text: String) throws(KeyError) {
        let pkey = try PEMText.parseDER(text) { d2i_PUBKEY(nil, $0, $1) }
        guard EVP_PKEY_is_a(pkey, "RSA") == 1 else {
            EVP_PKEY_free(pkey)
            throw .notRSA
        }
        let bits = Int(EVP_PKEY_get_bits(pkey))
        guard bits >= KeyError.minimumBits else {
            EVP_PKEY_free(pkey)
            throw .tooSmall(bits: bits)
        }
        guard let template = EVP_MD_CTX_new() else {
            EVP_PKEY_free(pkey)
            throw .notAKey("out of memory")
        }
        // The digest fetched once per process: naming it here would look it up again.
        guard EVP_DigestVerifyInit(template, nil, DigestAlgorithm.sha256.evpMD, nil, pkey) == 1 else {
            let message = OpenSSLError.lastMessage()
            EVP_MD_CTX_free(template)
            EVP_PKEY_free(pkey)
            throw .notAKey(message)
        }
        self.pkey = pkey
        self.template = template
    }

    deinit {
        EVP_MD_CTX_free(template)
        EVP_PKEY_free(pkey)
    }

    /// Key size in bits.
    public var bits: Int { Int(EVP_PKEY_get_bits(pkey)) }

    /// RSASSA-PKCS1-v1_5 with SHA-256 over the concatenation of `message`'s parts.
    public func verifySHA256(signature: [UInt8], message parts: [[UInt8]]) -> Bool {
        guard let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_MD_CTX_copy_ex(ctx, template) == 1 else {
            ERR_clear_error()
            return false
        }
        for part in parts {
            let ok = part.withUnsafeBytes { EVP_DigestVerifyUpdate(ctx, $0.baseAddress, $0.count) }
            guard ok == 1 else {
                ERR_clear_error()
                return false
            }
        }
        let result = signature.withUnsafeBufferPointer { EVP_DigestVerifyFinal(ctx, $0.baseAddress, $0.count) }
        if result != 1 { ERR_clear_error() }
        return result == 1
    }
}

/// An RSA private key for PKCS#1 v1.5 SHA-256 signing: `ipnd simulate` and tests, and the
/// merchant key Antom status inquiries are signed with.
public final class RSAPrivateKey: @unchecked Sendable {
    private let pkey: OpaquePointer

    /// Parses a PEM private key (PKCS#8 `PRIVATE KEY` or PKCS#1 `RSA PRIVATE KEY`).
    public convenience init(pem: String) throws(KeyError) {
        let bytes = Array(pem.utf8)
        let parsed: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let pkey = parsed else { throw .notAKey(OpenSSLError.lastMessage()) }
        try self.init(owning: pkey)
    }

    /// Parses a private key given as PEM (as `init(pem:)`) or as base64 DER, PKCS#8
    /// PrivateKeyInfo or PKCS#1 RSAPrivateKey, as Antom's tools hand merchants their keys.
    public convenience init(derOrPEM text: String) throws(KeyError) {
        if text.contains("-----BEGIN") {
            try self.init(pem: text)
            return
        }
        // Tells PKCS#8 from the traditional (PKCS#1) encoding by the structure itself.
        try self.init(owning: try PEMText.parseDER(text) { d2i_AutoPrivateKey(nil, $0, $1) })
    }

    /// Takes ownership of a parsed key, refusing (and freeing) anything but an RSA key of at
    /// least `KeyError.minimumBits`.
    private init(owning pkey: OpaquePointer) throws(KeyError) {
        guard EVP_PKEY_is_a(pkey, "RSA") == 1 else {
            EVP_PKEY_free(pkey)
            throw .notRSA
        }
        // Also what makes signing below unable to fail on a key from the config.
        let bits = Int(EVP_PKEY_get_bits(pkey))
        guard bits >= KeyError.minimumBits else {
            EVP_PKEY_free(pkey)
            throw .tooSmall(bits: bits)
        }
        self.pkey = pkey
    }

    /// Key size in bits.
    public var bits: Int { Int(EVP_PKEY_get_bits(pkey)) }

    deinit { EVP_PKEY_free(pkey) }

    /// RSASSA-PKCS1-v1_5 signature with SHA-256 over the concatenation of `parts`.
    public func signSHA256(_ parts: [[UInt8]]) -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new failed: out of memory") }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit_ex(ctx, nil, "SHA256", nil, nil, pkey, nil) == 1 else {
            fatalError("EVP_DigestSignInit_ex failed: \(OpenSSLError.lastMessage())")
        }
        for part in parts {
            _ = part.withUnsafeBytes { EVP_DigestSignUpdate(ctx, $0.baseAddress, $0.count) }
        }
        var length = 0
        guard EVP_DigestSignFinal(ctx, nil, &length) == 1 else {
            fatalError("EVP_DigestSignFinal failed: \(OpenSSLError.lastMessage())")
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSignFinal(ctx, &signature, &length) == 1 else {
            fatalError("EVP_DigestSignFinal failed: \(OpenSSLError.lastMessage())")
        }
        signature.removeSubrange(length...)
        return signature
    }
}

/// Turns base64 DER, with or without PEM armour, into DER bytes.
enum PEMText {
    /// The key `d2i` (an OpenSSL `d2i_...` function, given the cursor and the length) parses
    /// from the DER of `text`; the caller owns it.
    static func parseDER(
        _ text: String, _ d2i: (UnsafeMutablePointer<UnsafePointer<UInt8>?>, Int) -> OpaquePointer?
    ) throws(KeyError) -> OpaquePointer {
        guard let der = derBytes(of: text) else { throw .notBase64 }
        var cursor: UnsafePointer<UInt8>?
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            cursor = buffer.baseAddress
            return d2i(&cursor, buffer.count)
        }
        guard let pkey = parsed else { throw .notAKey(OpenSSLError.lastMessage()) }
        return pkey
    }

    static func derBytes(of text: String) -> [UInt8]? {
        var body = ""
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let trimmed = line.trimmingCharacters(in: " \t")
            if trimmed.hasPrefix("-----") { continue }
            body += trimmed
        }
        body.removeAll { $0 == " " || $0 == "\t" }
        guard !body.isEmpty else { return nil }
        return Base64.decode(body)
    }
}

extension Substring {
    func trimmingCharacters(in set: String) -> Substring {
        var result = self
        while let first = result.first, set.contains(first) { result.removeFirst() }
        while let last = result.last, set.contains(last) { result.removeLast() }
        return result
    }
}
