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

import Foundation
import IPNTestSupport
import IPNCore
import Testing

/// The Standard Webhooks specification's published vector (its reference libraries' tests).
private enum SpecVector {
    static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    static let id = "msg_p5jXN8AQM9LWM0D4loKWxJek"
    static let timestamp: Int64 = 1_614_265_330
    static let body = Array(#"{"test": 2432232314}"#.utf8)
    static let signature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
}

/// A `whsec_` secret for a key of `count` bytes drawn from `generator`.
private func secretText(bytes count: Int, seed: UInt64) -> String {
    var generator = SplitMix64(seed: seed)
    return "whsec_" + Base64.encode((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
}

@Suite("Standard Webhooks secrets")
struct WebhookSecretTests {
    @Test("the specification's example secret parses to its 24-byte key")
    func specSecret() throws {
        let secret = try WebhookSecret(parsing: SpecVector.secret)
        #expect(secret.key == Base64.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
        #expect(secret.key.count == 24)
    }

    @Test("keys of 24 to 64 bytes are accepted, padded or not", arguments: [24, 32, 33, 64])
    func goodLengths(count: Int) throws {
        let text = secretText(bytes: count, seed: UInt64(count))
        #expect(try WebhookSecret(parsing: text).key.count == count)
        let unpadded = String(text.reversed().drop(while: { $0 == "=" }).reversed())
        #expect(try WebhookSecret(parsing: unpadded) == WebhookSecret(parsing: text))
    }

    @Test("keys shorter than 24 or longer than 64 bytes are refused, saying the length", arguments: [1, 16, 23, 65, 128])
    func badLengths(count: Int) {
        #expect(throws: WebhookSecretError.wrongKeyLength(count)) {
            try WebhookSecret(parsing: secretText(bytes: count, seed: 7))
        }
    }

    @Test("malformed secrets say what is wrong without repeating the text")
    func malformed() {
        let cases: [(String, WebhookSecretError)] = [
            ("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", .missingPrefix),
            ("WHSEC_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", .missingPrefix),
            ("whsec_", .empty),
            ("whsec_MfKQ9r8GKYqr!wjUPD8ILPZIo2LaLaSw", .notBase64),
            ("whsec_MfKQ9r8GKYqrTwjUPD8I LPZIo2LaLaSw", .notBase64),
            ("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaL", .notBase64),  // 29 characters: no base64 length
        ]
        for (text, expected) in cases {
            #expect(throws: expected, "\(text)") { try WebhookSecret(parsing: text) }
            let message = expected.description
            #expect(!message.contains("MfKQ9r8GKYqr"), "\(message)")
            #expect(!message.isEmpty)
        }
    }

    @Test("a secret printed by mistake shows no key material")
    func redactedDescription() throws {
        let secret = try WebhookSecret(parsing: SpecVector.secret)
        for text in ["\(secret)", String(reflecting: secret), "\([secret])"] {
            #expect(!text.contains("MfKQ9r8GKYqr"), "\(text)")
            #expect(!text.contains("49"), "\(text)")  // the key's first byte, 0x31 = 49
        }
        var dumped = ""
        dump(secret, to: &dumped)
        #expect(!dumped.contains("49"), "\(dumped)")
    }
}

@Suite("Standard Webhooks signatures")
struct WebhookSignatureTests {
    @Test("reproduces the specification's published test vector")
    func specVector() throws {
        let secret = try WebhookSecret(parsing: SpecVector.secret)
        let signature = WebhookSignature.sign(id: SpecVector.id, timestamp: SpecVector.timestamp, body: SpecVector.body, secrets: [secret])
        #expect(signature == SpecVector.signature)
    }

    @Test("one v1 signature per secret, in order, separated by single spaces")
    func rotation() throws {
        let old = try WebhookSecret(parsing: SpecVector.secret)
        let new = try WebhookSecret(parsing: secretText(bytes: 32, seed: 1))
        let header = WebhookSignature.sign(id: SpecVector.id, timestamp: SpecVector.timestamp, body: SpecVector.body, secrets: [old, new])
        let parts = header.split(separator: " ", omittingEmptySubsequences: false)
        #expect(parts.count == 2)
        #expect(parts[0] == SpecVector.signature[...])
        #expect(parts[1].hasPrefix("v1,"))
        #expect(parts[1] != parts[0])
        #expect(WebhookSignature.sign(id: "x", timestamp: 1, body: [], secrets: []) == "")
    }

    @Test("headers carry the id, the attempt's unix seconds and the signature")
    func headers() throws {
        let secret = try WebhookSecret(parsing: SpecVector.secret)
        let headers = WebhookSignature.headers(id: SpecVector.id, timestamp: SpecVector.timestamp, body: SpecVector.body, secrets: [secret])
        #expect(headers.map(\.0) == ["webhook-id", "webhook-timestamp", "webhook-signature"])
        #expect(headers.map(\.1) == [SpecVector.id, "1614265330", SpecVector.signature])
    }

    @Test("isValid accepts any matching v1 entry and nothing changed")
    func validation() throws {
        let secret = try WebhookSecret(parsing: SpecVector.secret)
        let other = try WebhookSecret(parsing: secretText(bytes: 32, seed: 2))
        func valid(_ header: String, body: [UInt8] = SpecVector.body, id: String = SpecVector.id,
                   timestamp: Int64 = SpecVector.timestamp, secrets: [WebhookSecret]? = nil) -> Bool {
            WebhookSignature.isValid(signatureHeader: header, id: id, timestamp: timestamp, body: body, secrets: secrets ?? [secret])
        }
        #expect(valid(SpecVector.signature))
        #expect(valid("v2,abc v1,bm9wZQ== " + SpecVector.signature))
        #expect(valid(SpecVector.signature, secrets: [other, secret]))
        #expect(!valid(SpecVector.signature, secrets: [other]))
        #expect(!valid(SpecVector.signature, body: Array(#"{"test": 2432232315}"#.utf8)))
        #expect(!valid(SpecVector.signature, id: "msg_other"))
        #expect(!valid(SpecVector.signature, timestamp: SpecVector.timestamp + 1))
        #expect(!valid("v1a," + SpecVector.signature.dropFirst(3)))
        #expect(!valid(""))
    }
}

/// The reference Python library (tools/requirements-test.txt) verifies what ipnd signs.
@Suite("Standard Webhooks signatures, checked by the reference Python library")
struct WebhookReferenceLibraryTests {
    static let hasReferenceLibrary = PythonChecker.run(["-c", "import standardwebhooks"]).status == 0

    @Test(
        "standardwebhooks verifies ipnd's headers for each rotated secret and refuses a changed body",
        .enabled(if: hasReferenceLibrary,
                 "python3 lacks the standardwebhooks package: pip install -r tools/requirements-test.txt")
    )
    func referenceLibraryVerifies() throws {
        let secrets = [secretText(bytes: 32, seed: 3), secretText(bytes: 64, seed: 4), SpecVector.secret]
        let parsed = try secrets.map { try WebhookSecret(parsing: $0) }
        let body = Array(#"{"id":"3f2b8c1e","seq":42,"type":"order.state_changed","order":{"order_ref":"Zoë-1"}}"#.utf8)
        let timestamp = Int64(Date().timeIntervalSince1970)  // the library refuses timestamps 5 min off
        let headers = WebhookSignature.headers(id: "3f2b8c1e-0000-4000-8000-000000000001", timestamp: timestamp, body: body, secrets: parsed)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-webhooks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let headersFile = directory.appendingPathComponent("headers.json")
        let headerObject = Dictionary(uniqueKeysWithValues: headers.map { ($0.0, $0.1) })
        try JSONSerialization.data(withJSONObject: ["secrets": secrets, "headers": headerObject]).write(to: headersFile)
        let bodyFile = directory.appendingPathComponent("body")
        try Data(body).write(to: bodyFile)
        var changed = body
        changed[changed.count - 3] ^= 0x01
        let changedFile = directory.appendingPathComponent("changed")
        try Data(changed).write(to: changedFile)

        let script = """
            import json, sys
            from standardwebhooks.webhooks import Webhook, WebhookVerificationError
            spec = json.load(open(sys.argv[1]))
            for name in sys.argv[2:]:
                data = open(name, "rb").read()
                for secret in spec["secrets"]:
                    try:
                        Webhook(secret).verify(data, spec["headers"], json_parse=False)
                        print("verified")
                    except WebhookVerificationError as error:
                        print("refused: %s" % error)
            """
        let good = PythonChecker.run(["-c", script, headersFile.path, bodyFile.path])
        #expect(good.status == 0, "\(good.output)")
        #expect(good.output.split(separator: "\n") == ["verified", "verified", "verified"], "\(good.output)")
        let bad = PythonChecker.run(["-c", script, headersFile.path, changedFile.path])
        #expect(bad.status == 0, "\(bad.output)")
        #expect(bad.output.split(separator: "\n").allSatisfy { $0.hasPrefix("refused") } && bad.output.contains("refused"), "\(bad.output)")
    }
}

/// Runs python3 with `arguments`, returning its exit status and what it printed.
enum PythonChecker {
    static func run(_ arguments: [String]) -> (status: Int32, output: String) {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        do {
            try process.run()
        } catch {
            return (-1, "cannot run python3: \(error)")
        }
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }
}
