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
import IPNCore
import Testing

/// Runs a shell command line (a printed curl command) on a thread of its own.
func shell(_ commandLine: String) async throws -> CommandResult {
    try await runProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", commandLine])
}

@Suite("ipnd simulate against a live daemon (issue 4)", .serialized)
struct SimulateTests {
    @Test("output to a reader that went away (simulate | head) ends the command as SIGPIPE would, not with a crash")
    func closedPipe() async throws {
        let daemon = try await TestDaemon.start()
        // head takes the request line simulate prints first and exits; the answer, printed after
        // the round trip, goes into a pipe nobody reads.
        let result = try await runProcess(URL(fileURLWithPath: "/bin/bash"), ["-c", #""$@" | head -1 >/dev/null; echo "status=${PIPESTATUS[0]}""#, "ipnd",
            ipndBinary.path, "simulate", "unlimint", "--order", "SIM-PIPE", "--status", "COMPLETED", "--config", daemon.configPath,
            "--url", "http://127.0.0.1:\(daemon.ports.provider)/ipn/unlimint"])
        #expect(result.stdout == "status=141\n", "\(result.stdout) \(result.stderr)")
        #expect(!result.stderr.contains("Fatal error"), "\(result.stderr)")
        #expect(try daemon.verdicts(orderRef: "SIM-PIPE") == ["applied"])
        try await daemon.stop()
    }

    @Test("every provider: a simulated paid notification is applied, with the default amount", arguments: ProviderExpectations.all)
    func applied(_ expected: ProviderExpectations) async throws {
        let daemon = try await TestDaemon.start()
        let order = "SIM-\(expected.name)"
        // The default URL comes from server.host and server.port (overridden like any scalar key).
        let result = try await ipnd(
            ["simulate", expected.name, "--order", order, "--status", expected.paidStatus, "--config", daemon.configPath],
            environment: ["IPND_SERVER_PORT": "\(daemon.ports.provider)"])
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("HTTP 200 OK"), "\(result.stdout)")
        #expect(lines.last == expected.ackBody)
        #expect(try daemon.verdicts(orderRef: order) == ["applied"])
        #expect(try daemon.orderState(order, provider: expected.name) == "paid")
        let currency = expected.name == "juspay" ? "INR" : "USD"
        #expect(try daemon.count("SELECT amount_minor FROM orders WHERE order_ref = ? AND currency = ?", [order, currency]) == 1000)

        // Then `orders show` and the ops API see it.
        let show = try await ipnd(["orders", "show", expected.name, order, "--config", daemon.configPath, "--format", "json"])
        #expect(try parseJSONObject(show.stdout).string("state") == "paid")
        #expect(try await daemon.apiObject("/api/v1/orders/\(expected.name)/\(order)").string("amount") == "10.00")
        try await daemon.stop()
    }

    @Test("--print: the curl command, run by a shell, is accepted by the daemon (round trip)", arguments: ProviderExpectations.all)
    func printedCurlRoundTrip(_ expected: ProviderExpectations) async throws {
        let daemon = try await TestDaemon.start()
        let order = "CURL-\(expected.name) it's"
        let printed = try await ipnd([
            "simulate", expected.name, "--order", order, "--status", expected.paidStatus, "--amount", expected.amount.decimal,
            "--currency", expected.amount.currency, "--url", "http://127.0.0.1:\(daemon.ports.provider)", "--print",
            "--config", daemon.configPath,
        ])
        #expect(printed.status == 0, "\(printed.stderr)")
        #expect(printed.stdout.hasPrefix("curl "))
        #expect(printed.stdout.contains("--data-binary"))
        #expect(try daemon.count("SELECT COUNT(*) FROM notifications") == 0)  // printing sends nothing

        let sent = try await shell(printed.stdout)
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(sent.stdout.hasPrefix("HTTP/1.1 200"), "\(sent.stdout)")
        #expect(sent.stdout.hasSuffix(expected.ackBody))
        #expect(try daemon.verdicts(orderRef: order) == ["applied"])
        #expect(try daemon.orderState(order, provider: expected.name) == "paid")
        #expect(try daemon.count("SELECT amount_minor FROM orders WHERE order_ref = ?", [order]) == Int(expected.amount.minor))

        // Every run has its own provider ids: a second run is a new notification, not a duplicate.
        let again = try await ipnd([
            "simulate", expected.name, "--order", order, "--status", expected.paidStatus, "--amount", expected.amount.decimal,
            "--currency", expected.amount.currency, "--url", "http://127.0.0.1:\(daemon.ports.provider)", "--print",
            "--config", daemon.configPath,
        ])
        #expect(again.stdout != printed.stdout)
        try await daemon.stop()
    }

    @Test("a status word the provider never sends is sent all the same, with a warning naming the provider's words")
    func unknownStatusWarns() async throws {
        let daemon = try await TestDaemon.start()
        let url = "http://127.0.0.1:\(daemon.ports.provider)"
        let unknown = try await ipnd(["simulate", "alipay", "--order", "SIM-WORD-1", "--status", "SUCCESS", "--url", url,
                                      "--config", daemon.configPath])
        #expect(unknown.status == 0, "\(unknown.stdout) \(unknown.stderr)")
        #expect(unknown.stderr.contains(#"warning: alipay never sends status "SUCCESS""#), "\(unknown.stderr)")
        #expect(unknown.stderr.contains("alipay's status words: S, F, PENDING"), "\(unknown.stderr)")
        #expect(try daemon.verdicts(orderRef: "SIM-WORD-1") == ["unknown_status"])

        // A word the provider sends: no warning. With --print the command alone is on stdout.
        let known = try await ipnd(["simulate", "alipay", "--order", "SIM-WORD-2", "--status", "S", "--url", url,
                                    "--config", daemon.configPath])
        #expect(known.status == 0 && known.stderr.isEmpty, "\(known.stderr)")
        #expect(try daemon.verdicts(orderRef: "SIM-WORD-2") == ["applied"])
        let printed = try await ipnd(["simulate", "ipay88", "--order", "SIM-WORD-3", "--status", "paid", "--url", url, "--print",
                                      "--config", daemon.configPath])
        #expect(printed.status == 0 && printed.stdout.hasPrefix("curl "), "\(printed.stdout)")
        #expect(printed.stderr.contains(#"ipay88 never sends status "paid""#) && printed.stderr.contains("status words: 1, 0, 6"),
                "\(printed.stderr)")
        try await daemon.stop()
    }

    @Test("a named account posts to /ipn/{provider}/{account} with that account's secret")
    func namedAccount() async throws {
        let daemon = try await TestDaemon.start()
        let result = try await ipnd([
            "simulate", "unlimint", "--order", "SHOP2-1", "--status", "COMPLETED", "--account", "shop2",
            "--url", "http://127.0.0.1:\(daemon.ports.provider)", "--config", daemon.configPath,
        ])
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        #expect(result.stdout.contains("/ipn/unlimint/shop2"))
        #expect(try daemon.orderState("SHOP2-1", account: "shop2") == "paid")
        try await daemon.stop()
    }

    @Test("failures: a non-2xx answer or no daemon exits 1, an unsignable account 2, bad flags 64")
    func failures() async throws {
        let daemon = try await TestDaemon.start()
        let notFound = try await ipnd([
            "simulate", "unlimint", "--order", "F-1", "--status", "COMPLETED",
            "--url", "http://127.0.0.1:\(daemon.ports.provider)/ipn/unlimint/nobody", "--config", daemon.configPath,
        ])
        #expect(notFound.status == 1)
        #expect(notFound.stdout.contains("HTTP 404"))
        try await daemon.stop()

        let unreachable = try await ipnd([
            "simulate", "unlimint", "--order", "F-1", "--status", "COMPLETED", "--url", "http://127.0.0.1:1",
            "--config", daemon.configPath,
        ])
        #expect(unreachable.status == 1)
        #expect(unreachable.stderr.contains("cannot reach"))

        let publicKey = String(decoding: Fixture.bytes("alipay-test-public-key.b64"), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let noKey = try writeConfig("""
            store:
              path: s.sqlite
            providers:
              alipay:
                - account: default
                  client_id: C1
                  public_key: "\(publicKey)"
            """)
        let unsignable = try await ipnd(["simulate", "alipay", "--order", "F-2", "--status", "S", "--print", "--config", noKey])
        #expect(unsignable.status == 2)
        #expect(unsignable.stderr.contains("simulate_private_key_file"))

        for arguments in [["simulate", "paypal", "--order", "A", "--status", "S"], ["simulate", "unlimint", "--status", "S"],
                          ["simulate", "unlimint", "--order", "A", "--status", "S", "--amount", "1.001"],
                          ["simulate", "unlimint", "--order", "A", "--status", "S", "--url", "ftp://x"]] {
            #expect(try await ipnd(arguments + ["--config", noKey]).status == 64, "\(arguments)")
        }
        // simulate sends plain HTTP to ipnd's own listener; an https URL is for --print.
        let https = try await ipnd(["simulate", "unlimint", "--order", "A", "--status", "S", "--url", "https://ipn.example.com",
                                    "--config", daemon.configPath])
        #expect(https.status == 64)
        #expect(https.stderr.contains("--print"), "\(https.stderr)")
        let printed = try await ipnd(["simulate", "unlimint", "--order", "A", "--status", "S", "--url", "https://ipn.example.com",
                                      "--print", "--config", daemon.configPath])
        #expect(printed.status == 0, "\(printed.stderr)")
        #expect(printed.stdout.hasPrefix("curl -sS -i 'https://ipn.example.com/ipn/unlimint'"), "\(printed.stdout)")
        #expect(try await ipnd(["simulate", "unlimint", "--order", "A", "--status", "S", "--print", "--config", noKey]).status == 2)
    }
}
