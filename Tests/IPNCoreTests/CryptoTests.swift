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
import Testing

@Suite("OpenSSL wrapper")
struct CryptoTests {
    /// A 1024-bit RSA SubjectPublicKeyInfo, base64 DER (made with openssl genpkey for this test).
    static let rsa1024PublicKey = "MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC2hjDyaTPq+HMN/4vc/+zumkI8qA8PncEW+FtX4pQ2fkxn+43usRPvEuI65+7wXF1zMPMw7yEoQYBIncepX1502Oy9aw7kbwERQppbF45fo8S4rEJZaVoT+02lmcmz9MMzs/DXFe13/FTe2PKgsDrW54sB3+Vu/QVJzhhN9RnonQIDAQAB"

    private let abc = Array("abc".utf8)

    @Test("digests match the published test vectors")
    func digests() {
        #expect(Hex.encode(Crypto.digest(.md5, abc)) == "900150983cd24fb0d6963f7d28e17f72")
        #expect(Hex.encode(Crypto.digest(.sha1, abc)) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(Hex.encode(Crypto.digest(.sha256, abc)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Hex.encode(Crypto.digest(.sha512, abc)) ==
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f")
        #expect(Crypto.digest(.sha256, Array("ab".utf8), Array("c".utf8)) == Crypto.digest(.sha256, abc))
    }

    @Test("HMAC matches RFC 4231 test case 2")
    func hmac() {
        let mac = Crypto.hmac(.sha512, key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8))
        #expect(Hex.encode(mac) ==
            "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737")
        let sha256 = Crypto.hmac(.sha256, key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8))
        #expect(Hex.encode(sha256) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(Crypto.hmac(.sha256, key: [], data: abc).count == 32)
    }

    @Test("constant-time compare and hex digests")
    func compare() {
        #expect(Crypto.constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!Crypto.constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!Crypto.constantTimeEquals([1, 2, 3], [1, 2]))
        #expect(Crypto.constantTimeEquals([], []))
        let digest = Crypto.digest(.sha256, abc)
        #expect(Crypto.hexDigestMatches(Hex.encode(digest).uppercased(), expected: digest))
        #expect(!Crypto.hexDigestMatches("zz", expected: digest))
        #expect(!Crypto.hexDigestMatches(String(Hex.encode(digest).dropLast()), expected: digest))
    }

    @Test("RSA-SHA256 signs and verifies with the test key pair; a changed byte fails")
    func rsa() throws {
        let privateKey = try RSAPrivateKey(pem: Fixture.text("alipay-test-private-key.pem"))
        let publicKey = try RSAPublicKey(derOrPEM: Fixture.text("alipay-test-public-key.b64"))
        #expect(publicKey.bits == 2048)
        let message = [Array("POST /ipn/alipay\n".utf8), Array("body".utf8)]
        let signature = privateKey.signSHA256(message)
        #expect(publicKey.verifySHA256(signature: signature, message: message))
        #expect(publicKey.verifySHA256(signature: signature, message: [Array("POST /ipn/alipay\nbody".utf8)]))
        #expect(!publicKey.verifySHA256(signature: signature, message: [Array("POST /ipn/alipay\nbodY".utf8)]))
        var bad = signature
        bad[10] ^= 1
        #expect(!publicKey.verifySHA256(signature: bad, message: message))
        #expect(!publicKey.verifySHA256(signature: [], message: message))
    }

    @Test("one public key verifies from many threads at once: every genuine signature passes, every altered one fails")
    func rsaConcurrent() async throws {
        let privateKey = try RSAPrivateKey(pem: Fixture.text("alipay-test-private-key.pem"))
        let publicKey = try RSAPublicKey(derOrPEM: Fixture.text("alipay-test-public-key.b64"))
        let messages = (0..<16).map { [Array("message \($0)".utf8)] }
        let signatures = messages.map { privateKey.signSHA256($0) }
        let wrong = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var wrong = 0
                    for round in 0..<50 {
                        let index = (worker + round) % messages.count
                        var altered = signatures[index]
                        altered[round % altered.count] ^= 1
                        if !publicKey.verifySHA256(signature: signatures[index], message: messages[index]) { wrong += 1 }
                        if publicKey.verifySHA256(signature: altered, message: messages[index]) { wrong += 1 }
                        if publicKey.verifySHA256(signature: signatures[index], message: messages[(index + 1) % messages.count]) {
                            wrong += 1
                        }
                    }
                    return wrong
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(wrong == 0)
    }

    @Test("public keys load from bare base64 and PEM; junk is refused")
    func keyLoading() throws {
        let bare = Fixture.text("alipay-test-public-key.b64").trimmingCharacters(in: .newlines)
        var pem = "-----BEGIN PUBLIC KEY-----\n"
        var rest = Substring(bare)
        while !rest.isEmpty {
            pem += rest.prefix(64) + "\n"
            rest = rest.dropFirst(64)
        }
        pem += "-----END PUBLIC KEY-----\n"
        #expect(try RSAPublicKey(derOrPEM: pem).bits == 2048)
        #expect(throws: KeyError.notBase64) { try RSAPublicKey(derOrPEM: "not base64!") }
        // Keys that can be factored are refused, public (to verify) and private (to simulate).
        #expect(throws: KeyError.tooSmall(bits: 1024)) { try RSAPublicKey(derOrPEM: Self.rsa1024PublicKey) }
        #expect(throws: KeyError.tooSmall(bits: 512)) { try RSAPrivateKey(pem: Fixture.text("rsa-512-private-key.pem")) }
        #expect(throws: KeyError.self) { try RSAPublicKey(derOrPEM: "AAAA") }
        #expect(throws: KeyError.self) { try RSAPrivateKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n") }
    }

    @Test("hex and base64")
    func encodings() {
        #expect(Hex.decode("00fFaA") == [0, 255, 170])
        #expect(Hex.decode("0") == nil)
        #expect(Hex.decode("0g") == nil)
        #expect(Base64.encode([0xff, 0x00, 0x10]) == "/wAQ")
        #expect(Base64.decode("/wAQ") == [0xff, 0x00, 0x10])
        #expect(Base64.decode("/wA*") == nil)
    }
}

import Foundation
