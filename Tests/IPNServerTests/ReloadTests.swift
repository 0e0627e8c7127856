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

import AsyncHTTPClient
import Foundation
import GRDB
import IPNCore
@testable import IPNServer
import IPNTestSupport
import NIOCore
import Testing

extension TestDaemon {
    /// Edits the config file in place (kept 0600), as an operator does before a reload.
    func editConfig(_ edit: (String) -> String) throws {
        let text = try String(contentsOfFile: configPath, encoding: .utf8)
        let edited = edit(text)
        #expect(edited != text, "the edit changed nothing")
        try Data(edited.utf8).write(to: URL(fileURLWithPath: configPath))
        chmod(configPath, 0o600)
    }

    /// Posts an Unlimint payment for `order` to `path`, signed with `secret`.
    func postUnlimint(_ order: String, path: String = "/ipn/unlimint", secret: String = TestDaemon.unlimintSecret) async throws -> Answer {
        let body = UnlimintRequests.body(order: order, id: "PAY-\(order)", status: "COMPLETED")
        return try await post(path, body: body, headers: UnlimintRequests.headers(for: body, secret: secret))
    }
}

/// `tokens_sha256: [...]` for `tokens`.
private func tokensLine(_ tokens: [String]) -> String {
    "tokens_sha256: [\(tokens.map { Hex.encode(Crypto.digest(.sha256, Array($0.utf8))) }.joined(separator: ", "))]"
}

@Suite("Reload: the config re-read without a restart (issue 33)")
struct ReloadTests {
    @Test("""
        a reload puts in force a new account, allow_ips, ops tokens, a delivery target and the rejected-request budget; \
        a changed listener port is logged as needing a restart and the listener stays where it is
        """, arguments: Backend.allCases)
    func appliesWhatItCan(backend: Backend) async throws {
        let secret = WebhookReceiver.newSecret()
        let receiver = try WebhookReceiver(secrets: [secret])
        defer { receiver.stop() }
        let daemon = try await TestDaemon.start(backend: backend)
        #expect(try await daemon.postUnlimint("EU-0", path: "/ipn/unlimint/eu", secret: "eu-secret").status == 404)
        #expect(try await daemon.api("/api/v1/orders", token: "rotated-token").status == 401)
        try await daemon.deliverShop2(order: "SHOP2-0")
        let rejectedBefore = try daemon.count("SELECT COUNT(*) FROM notifications WHERE verdict = 'rejected'")

        try daemon.editConfig { yaml in
            // server.port only: the first `port:` after `server:` (ops has one too).
            var yaml = yaml
            if let server = yaml.range(of: "server:"), let port = yaml.range(of: "  port: 0\n", range: server.upperBound..<yaml.endIndex) {
                yaml.replaceSubrange(port, with: "  port: 1\n")
            }
            return yaml
                .replacingOccurrences(
                    of: "tokens_sha256: [\(Hex.encode(Crypto.digest(.sha256, Array(TestDaemon.opsToken.utf8))))]",
                    with: tokensLine(["rotated-token"]))
                .replacingOccurrences(of: "callback_secret: shop2-secret", with: "callback_secret: shop2-secret\n      allow_ips: [10.0.0.0/8]")
                .replacingOccurrences(of: "  unlimint:\n", with: "  unlimint:\n    - account: eu\n      callback_secret: eu-secret\n")
                .replacingOccurrences(of: "server:\n", with: "server:\n  rejected_store_per_minute: 0\n")
                + "\n" + deliveriesYAML(url: receiver.url, secrets: [secret]) + "\n"
        }
        let outcome = await daemon.daemon.reload()
        #expect(outcome == .applied(needsRestart: ["server.port"]), "\(daemon.logs.captured.suffix(5))")
        #expect(daemon.logs.captured.contains { $0.contains("need a restart") && $0.contains("keys=server.port") })
        #expect(daemon.daemon.config.server.port == 0, "the listener's port stays the one in force")

        // The new account, on the listener that stayed where it was.
        #expect(try await daemon.postUnlimint("EU-1", path: "/ipn/unlimint/eu", secret: "eu-secret").status == 200)
        #expect(try daemon.orderState("EU-1", account: "eu") == "paid")
        // shop2 now takes only 10.0.0.0/8.
        let outside = try await daemon.postUnlimint("SHOP2-1", path: "/ipn/unlimint/shop2", secret: "shop2-secret")
        #expect(outside.status == 403, "\(outside.text)")
        #expect(outside.text == "forbidden\n")
        // The ops token rotated.
        #expect(try await daemon.api("/api/v1/orders").status == 401)
        #expect(try await daemon.api("/api/v1/orders", token: "rotated-token").status == 200)
        // The budget is 0: a bad signature from outside any allow_ips is answered, not stored,
        // nor is the 403 above.
        #expect(try await daemon.postUnlimint("FORGED-1", secret: "forged").status == 400)
        #expect(try daemon.count("SELECT COUNT(*) FROM notifications WHERE verdict = 'rejected'") == rejectedBefore)
        // The new delivery target gets the events committed from now on.
        try await daemon.deliver("unlimint", order: "AFTER-1", status: "COMPLETED")
        let delivered = try await receiver.wait(timeout: 20) { received in
            received.contains { $0.order == "AFTER-1" } && received.contains { $0.order == "EU-1" }
        }
        #expect(delivered.allSatisfy { $0.verified == [true] })
        #expect(!delivered.contains { $0.order == "SHOP2-0" }, "an event from before the target existed is not delivered to it")
        try await daemon.stop()
    }

    @Test("a config that fails validation changes nothing: refused with the key named, logged, counted; the next good one applies")
    func brokenConfigChangesNothing() async throws {
        let daemon = try await TestDaemon.start()
        try daemon.editConfig { yaml in
            yaml.replacingOccurrences(of: "callback_secret: shop2-secret", with: "callback_secret: eu-secret")
                .replacingOccurrences(of: "  unlimint:\n", with: "  unlimint:\n    - account: eu\n      callback_secret_file: /nonexistent/eu-secret\n")
        }
        let outcome = await daemon.daemon.reload()
        guard case .refused(let reason) = outcome else {
            Issue.record("reload applied a broken config: \(outcome)")
            return
        }
        #expect(reason.contains("providers.unlimint[0].callback_secret_file"), "\(reason)")
        #expect(daemon.logs.captured.contains { $0.contains("config reload refused") && $0.contains("callback_secret_file") })
        let metrics = try parsePrometheus(try await daemon.get("/metrics", ops: true, headers: [("Authorization", "Bearer \(TestDaemon.opsToken)")]).text)
        #expect(metrics.value("ipnd_config_reload_failures_total") == 1)
        // Nothing changed: shop2 keeps its secret, eu does not exist.
        try await daemon.deliverShop2(order: "KEPT-1")
        #expect(try await daemon.postUnlimint("EU-1", path: "/ipn/unlimint/eu", secret: "eu-secret").status == 404)

        // Fixed: the same edit with a readable secret file applies.
        let secretFile = daemon.directory.appendingPathComponent("eu-secret").path
        try Data("eu-secret\n".utf8).write(to: URL(fileURLWithPath: secretFile))
        chmod(secretFile, 0o600)
        try daemon.editConfig { $0.replacingOccurrences(of: "/nonexistent/eu-secret", with: secretFile) }
        #expect(await daemon.daemon.reload() == .applied(needsRestart: []))
        #expect(try await daemon.postUnlimint("EU-2", path: "/ipn/unlimint/eu", secret: "eu-secret").status == 200)
        let old = UnlimintRequests.body(order: "OLD-SHOP2", id: "x", status: "COMPLETED")
        #expect(try await daemon.post("/ipn/unlimint/shop2", body: old, headers: UnlimintRequests.headers(for: old, secret: "shop2-secret")).status == 400)
        try await daemon.stop()
    }

    @Test("""
        SIGHUP to ipnd serve under load, secrets swapped: RELOADING=1 then READY=1; no request fails for a reason other than \
        the secret it was signed with, none goes unanswered; a broken config on the next SIGHUP changes nothing
        """)
    func sighupUnderLoad() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ipnd-reload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let secretFile = directory.appendingPathComponent("unlimint-secret").path
        func writeSecret(_ secret: String) throws {
            try Data("\(secret)\n".utf8).write(to: URL(fileURLWithPath: secretFile))
            chmod(secretFile, 0o600)
        }
        try writeSecret("secret-before")
        let configPath = directory.appendingPathComponent("ipnd.yaml").path
        let config = """
            server:
              host: 127.0.0.1
              port: 0
            store:
              path: \(directory.appendingPathComponent("ipnd.sqlite").path)
            ops:
              host: 127.0.0.1
              port: 0
              \(tokensLine([TestDaemon.opsToken]))
            providers:
              unlimint:
                - account: default
                  callback_secret_file: \(secretFile)
            """
        try Data(config.utf8).write(to: URL(fileURLWithPath: configPath))
        chmod(configPath, 0o600)
        let notify = try NotifySocket()
        let daemon = try DaemonProcess(configPath: configPath, environment: ["NOTIFY_SOCKET": notify.name])
        let ports = try await daemon.waitUntilListening()
        #expect(await notify.receive(for: 5) { $0.hasPrefix("READY=1") }.contains { $0.message.hasPrefix("READY=1") })

        /// One request: which secret signed it, when it was sent and answered, what came back.
        struct Sent: Sendable {
            let secret: String
            let started: Date
            let ended: Date
            let status: Int?
        }
        let sending = Locked(true)
        let answered = Locked(0)
        /// Waits until `count` requests more than `from` have been answered (or 60 s went by):
        /// progress, not a fixed time, so that a slow machine still sends enough on each side.
        func waitForAnswers(_ count: Int, after from: Int) async throws {
            let deadline = Date().addingTimeInterval(60)
            while answered.withLock({ $0 }) < from + count, Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        }
        let load = Task { () -> [Sent] in
            await withTaskGroup(of: [Sent].self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        var sent: [Sent] = []
                        var index = 0
                        while sending.withLock({ $0 }) {
                            let secret = index % 2 == 0 ? "secret-before" : "secret-after"
                            let order = "LOAD-\(worker)-\(index)"
                            let body = UnlimintRequests.body(order: order, id: "PAY-\(order)", status: "COMPLETED")
                            var request = HTTPClientRequest(url: "http://127.0.0.1:\(ports.provider)/ipn/unlimint")
                            request.method = .POST
                            for (name, value) in UnlimintRequests.headers(for: body, secret: secret) {
                                request.headers.add(name: name, value: value)
                            }
                            request.body = .bytes(ByteBuffer(bytes: body))
                            let started = Date()
                            var status: Int?
                            if let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(10)),
                               (try? await response.body.collect(upTo: 1024)) != nil {
                                status = Int(response.status.code)
                            }
                            sent.append(Sent(secret: secret, started: started, ended: Date(), status: status))
                            answered.withLock { $0 += 1 }
                            index += 1
                        }
                        return sent
                    }
                }
                return await group.reduce(into: []) { $0 += $1 }
            }
        }
        try await waitForAnswers(24, after: 0)
        // The operator's rotation: the provider now signs with the new secret.
        try writeSecret("secret-after")
        let hangUp = Date()
        daemon.signal(SIGHUP)
        let reloadMessages = await notify.receive(for: 20) { $0.hasPrefix("READY=1") }
        let reloaded = Date()
        try await waitForAnswers(24, after: answered.withLock { $0 })
        sending.withLock { $0 = false }
        let sent = await load.value

        // What the reload said, from RELOADING=1 on (a periodic STATUS= may come before it).
        let messages = reloadMessages.map(\.message).drop { !$0.hasPrefix("RELOADING=1") }
        #expect(messages.count == 2, "\(messages)")
        #expect(messages.first?.hasPrefix("RELOADING=1\nMONOTONIC_USEC=") == true, "\(messages)")
        #expect(messages.last?.hasPrefix("READY=1") == true, "\(messages)")
        #expect(sent.count > 40, "the load sent \(sent.count) requests")
        #expect(sent.allSatisfy { $0.status == 200 || $0.status == 400 },
                "answers other than 200 and 400 (nil: none): \(Set(sent.map { $0.status.map(String.init) ?? "nil" }))")
        for request in sent {
            let before = request.ended < hangUp
            let after = request.started > reloaded
            switch (request.secret, before, after) {
            case ("secret-before", true, _), ("secret-after", _, true): #expect(request.status == 200, "\(request)")
            case ("secret-before", _, true), ("secret-after", true, _): #expect(request.status == 400, "\(request)")
            default: break  // sent while the reload ran: either secret may be the one in force
            }
        }
        #expect(sent.contains { $0.ended < hangUp } && sent.contains { $0.started > reloaded })

        // A config that does not validate: the running one stays, and systemd still hears READY=1.
        try Data((config + "\n  bogus_key: 1\n").utf8).write(to: URL(fileURLWithPath: configPath))
        daemon.signal(SIGHUP)
        let refused = await notify.receive(for: 20) { $0.hasPrefix("READY=1") }.map(\.message).drop { !$0.hasPrefix("RELOADING=1") }
        #expect(refused.first?.hasPrefix("RELOADING=1") == true && refused.last?.contains("reload refused") == true, "\(refused)")
        let client = HTTPClient.shared
        for (secret, expected) in [("secret-after", 200), ("secret-before", 400)] {
            let body = UnlimintRequests.body(order: "KEPT-\(secret)", id: "PAY-KEPT-\(secret)", status: "COMPLETED")
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(ports.provider)/ipn/unlimint")
            request.method = .POST
            for (name, value) in UnlimintRequests.headers(for: body, secret: secret) { request.headers.add(name: name, value: value) }
            request.body = .bytes(ByteBuffer(bytes: body))
            let response = try await client.execute(request, timeout: .seconds(10))
            #expect(Int(response.status.code) == expected, "signed with \(secret)")
            _ = try await response.body.collect(upTo: 1024)
        }
        #expect(daemon.logLines.contains { $0.contains("config reload refused") && $0.contains("bogus_key") }, "\(daemon.logLines.suffix(5))")

        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit(timeout: 30) == 0)
        // Every notification answered 200 is stored applied; every rejection is a bad signature.
        var readOnly = Configuration()
        readOnly.readonly = true
        let store = try DatabaseQueue(path: directory.appendingPathComponent("ipnd.sqlite").path, configuration: readOnly)
        let (applied, otherRejections) = try await store.read { db in
            (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notifications WHERE verdict = 'applied'"),
             try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notifications WHERE verdict = 'rejected' AND reason <> 'bad_signature'"))
        }
        #expect(applied == sent.filter { $0.status == 200 }.count + 1)
        #expect(otherRejections == 0)
    }
}
