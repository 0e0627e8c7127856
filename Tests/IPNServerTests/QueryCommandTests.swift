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

/// A daemon whose store holds real deliveries of several providers, accounts, states and
/// verdicts, for the query commands to read while it runs.
private func filledDaemon(_ backend: Backend) async throws -> TestDaemon {
    let daemon = try await TestDaemon.start(backend: backend)
    try await daemon.deliver("unlimint", order: "Q-1", status: "COMPLETED", uid: "q1")
    try await daemon.deliver("unlimint", order: "Q-1", status: "COMPLETED", uid: "q1")  // duplicate
    try await daemon.deliver("alipay", order: "Q-2", status: "F", amount: Money(minor: 4200, currency: "SGD"))
    try await daemon.deliver("citcon", order: #"Q-3, "quoted""#, status: "success")
    try await daemon.deliverShop2(order: "Q-4")
    try await daemon.deliver("ipay88", order: "Q-5", status: "6", amount: Money(minor: 127_899, currency: "MYR"))
    let forged = UnlimintRequests.body(order: "Q-6", id: "f", status: "COMPLETED")
    _ = try await daemon.post("/ipn/unlimint", body: forged, headers: UnlimintRequests.headers(for: forged, secret: "guess"))
    return daemon
}

@Suite("ipnd orders / notifications: formats, filters, exit codes over a live store (issue 4)", .serialized)
struct QueryCommandTests {
    @Test("orders list: json lines with the fields of product.md, newest first, every filter", arguments: Backend.allCases)
    func ordersListJSON(backend: Backend) async throws {
        let daemon = try await filledDaemon(backend)
        let config = daemon.configPath
        let result = try await ipnd(["orders", "list", "--config", config, "--format", "json"])
        #expect(result.status == 0, "\(result.stderr)")
        let orders = try parseJSONLines(result.stdout)
        #expect(orders.map { $0.string("order_ref") } == ["Q-5", "Q-4", #"Q-3, "quoted""#, "Q-2", "Q-1"])
        #expect(result.stdout.split(separator: "\n").count == 5)
        for order in orders { #expect(order.keySet == SpecFields.order) }
        let q1 = try #require(orders.last)
        #expect(q1.string("state") == "paid")
        #expect(q1.int("amount_minor") == 1000)
        #expect(q1.string("amount") == "10.00")
        #expect(q1.isNull("expected"))

        func refs(_ flags: [String]) async throws -> [String] {
            let result = try await ipnd(["orders", "list", "--config", config, "--format", "json"] + flags)
            #expect(result.status == 0, "\(flags): \(result.stderr)")
            return try parseJSONLines(result.stdout).compactMap { $0.string("order_ref") }
        }
        #expect(try await refs(["--provider", "alipay"]) == ["Q-2"])
        #expect(try await refs(["--provider", "unlimint", "--account", "shop2"]) == ["Q-4"])
        #expect(try await refs(["--state", "paid"]) == ["Q-4", #"Q-3, "quoted""#, "Q-1"])
        #expect(try await refs(["--state", "pending"]) == ["Q-5"])
        #expect(try await refs(["--since", "2000-01-01"]).count == 5)
        #expect(try await refs(["--since", "2999-01-01T00:00:00+08:00"]) == [])
        #expect(try await refs(["--limit", "2"]) == ["Q-5", "Q-4"])
        try await daemon.stop()
    }

    @Test("orders list and notifications list: csv with a header row parses back to the json values", arguments: Backend.allCases)
    func csv(backend: Backend) async throws {
        let daemon = try await filledDaemon(backend)
        let config = daemon.configPath
        let csv = try await ipnd(["orders", "list", "--config", config, "--format", "csv"])
        #expect(csv.status == 0, "\(csv.stderr)")
        let rows = parseCSV(csv.stdout)
        #expect(rows.first == SpecFields.orderColumns)
        let json = try parseJSONLines(try await ipnd(["orders", "list", "--config", config, "--format", "json"]).stdout)
        #expect(rows.count == json.count + 1)
        for (row, object) in zip(rows.dropFirst(), json) {
            #expect(row.count == SpecFields.orderColumns.count)
            for (column, value) in zip(SpecFields.orderColumns, row) {
                let expected: String = switch object[column] {
                case let number as NSNumber: number.stringValue
                case let text as String: text
                default: ""
                }
                #expect(value == expected, "\(column)")
            }
        }
        #expect(rows.contains { $0.count > 2 && $0[2] == #"Q-3, "quoted""# })
        #expect(csv.stdout.contains(#""Q-3, ""quoted""""#))

        let notifications = try await ipnd(["notifications", "list", "--config", config, "--format", "csv", "--verdict", "rejected"])
        let notificationRows = parseCSV(notifications.stdout)
        #expect(notificationRows.first == SpecFields.notificationColumns)
        #expect(notificationRows.count == 2)
        #expect(notificationRows.last?[5] == "rejected")
        #expect(notificationRows.last?[6] == "bad_signature")

        let empty = try await ipnd(["orders", "list", "--config", config, "--format", "csv", "--provider", "juspay"])
        #expect(parseCSV(empty.stdout) == [SpecFields.orderColumns])
        try await daemon.stop()
    }

    @Test("table output: a header row and aligned columns", arguments: Backend.allCases)
    func table(backend: Backend) async throws {
        let daemon = try await filledDaemon(backend)
        let result = try await ipnd(["orders", "list", "--config", daemon.configPath])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 6)
        let header = try #require(lines.first)
        #expect(header.hasPrefix("PROVIDER"))
        // The creation time the list is ordered by, then the last change.
        #expect(header.hasSuffix("CREATED_AT                UPDATED_AT"), "\(header)")
        let stateColumn = try #require(header.range(of: "STATE")).lowerBound.utf16Offset(in: header)
        let states = lines.dropFirst().map { line in
            String(line.dropFirst(stateColumn).prefix { $0 != " " })
        }
        #expect(states == ["pending", "paid", "paid", "failed", "paid"])

        let notifications = try await ipnd(["notifications", "list", "--config", daemon.configPath, "--provider", "unlimint"])
        let notificationLines = notifications.stdout.split(separator: "\n").map(String.init)
        #expect(notificationLines.count == 5)
        let verdictColumn = try #require(notificationLines[0].range(of: "VERDICT")).lowerBound.utf16Offset(in: notificationLines[0])
        #expect(notificationLines.dropFirst().map { String($0.dropFirst(verdictColumn).prefix { $0 != " " }) }
                == ["rejected", "applied", "duplicate", "applied"])
        try await daemon.stop()
    }

    @Test("table output escapes what would rearrange the terminal (a bidi override, a zero-width space); json keeps it", arguments: Backend.allCases)
    func tableEscapesHiddenCharacters(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        let reference = "ORD-\u{202E}1-\u{200B}2"
        try await daemon.deliver("unlimint", order: reference, status: "COMPLETED")
        let table = try await ipnd(["orders", "list", "--config", daemon.configPath])
        #expect(table.status == 0, "\(table.stderr)")
        #expect(table.stdout.contains(#"ORD-\u{202e}1-\u{200b}2"#), "\(table.stdout)")
        #expect(!table.stdout.unicodeScalars.contains { $0.value == 0x202E || $0.value == 0x200B })
        let shown = try await ipnd(["orders", "show", "--config", daemon.configPath, "unlimint", reference])
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect(!shown.stdout.unicodeScalars.contains { $0.value == 0x202E || $0.value == 0x200B }, "\(shown.stdout)")
        // Machine formats carry the reference as stored.
        let json = try await ipnd(["orders", "list", "--config", daemon.configPath, "--format", "json"])
        #expect(try parseJSONLines(json.stdout).first?.string("order_ref") == reference)
        try await daemon.stop()
    }

    @Test("notifications list: json lines with verdicts and every filter", arguments: Backend.allCases)
    func notificationsList(backend: Backend) async throws {
        let daemon = try await filledDaemon(backend)
        let config = daemon.configPath
        let result = try await ipnd(["notifications", "list", "--config", config, "--format", "json"])
        #expect(result.status == 0, "\(result.stderr)")
        let all = try parseJSONLines(result.stdout)
        #expect(all.count == 7)
        for notification in all { #expect(notification.keySet == SpecFields.notification) }
        #expect(all.map { $0.string("verdict") } == ["rejected", "applied", "applied", "applied", "applied", "duplicate", "applied"])
        let ids = all.compactMap { $0.int("id") }
        #expect(ids == ids.sorted(by: >))

        func verdicts(_ flags: [String]) async throws -> [String] {
            let result = try await ipnd(["notifications", "list", "--config", config, "--format", "json"] + flags)
            #expect(result.status == 0, "\(flags): \(result.stderr)")
            return try parseJSONLines(result.stdout).compactMap { $0.string("verdict") }
        }
        #expect(try await verdicts(["--verdict", "duplicate"]) == ["duplicate"])
        #expect(try await verdicts(["--provider", "alipay"]) == ["applied"])
        #expect(try await verdicts(["--account", "shop2"]) == ["applied"])
        #expect(try await verdicts(["--limit", "1"]) == ["rejected"])
        #expect(try await verdicts(["--since", "2999-01-01"]) == [])
        try await daemon.stop()
    }

    @Test("orders show: json and table with transitions and notifications; exit 1 when not found", arguments: Backend.allCases)
    func show(backend: Backend) async throws {
        let daemon = try await filledDaemon(backend)
        let config = daemon.configPath
        let json = try await ipnd(["orders", "show", "unlimint", "Q-1", "--config", config, "--format", "json"])
        #expect(json.status == 0, "\(json.stderr)")
        #expect(json.stdout.split(separator: "\n").count == 1)
        let order = try parseJSONObject(json.stdout)
        #expect(order.keySet == SpecFields.orderDetail)
        #expect(order.objects("transitions").map { $0.keySet } == [SpecFields.transition])
        #expect(order.objects("transitions").first?.isNull("from") == true)
        #expect(order.objects("notifications").map { $0.string("verdict") } == ["applied", "duplicate"])

        let shop2 = try await ipnd(["orders", "show", "unlimint", "Q-4", "--account", "shop2", "--config", config, "--format", "json"])
        #expect(try parseJSONObject(shop2.stdout).string("account") == "shop2")

        let table = try await ipnd(["orders", "show", "unlimint", "Q-1", "--config", config])
        #expect(table.status == 0)
        #expect(table.stdout.contains("paid"))
        #expect(table.stdout.contains("transitions:"))
        #expect(table.stdout.contains("duplicate"))

        let missing = try await ipnd(["orders", "show", "unlimint", "NOPE", "--config", config])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("NOPE"))
        #expect(missing.stdout.isEmpty)
        #expect(try await ipnd(["orders", "show", "unlimint", "Q-4", "--config", config]).status == 1)  // wrong account
        try await daemon.stop()
    }

    @Test("exit codes: 64 usage, 2 config error, 3 store unavailable", arguments: Backend.allCases)
    func exitCodes(backend: Backend) async throws {
        let daemon = try await filledDaemon(backend)
        let config = daemon.configPath
        for arguments in [
            ["orders", "list", "--state", "bogus"], ["orders", "list", "--format", "xml"], ["orders", "list", "--limit", "0"],
            ["orders", "list", "--since", "last tuesday"], ["orders", "list", "--provider", "paypal"],
            ["orders", "show", "unlimint", "Q-1", "--format", "csv"], ["orders", "show", "paypal", "Q-1"],
            ["notifications", "list", "--verdict", "maybe"], ["orders", "expect", "unlimint", "Q-9", "--amount", "1.234", "--currency", "USD"],
            ["orders", "expect", "unlimint", "Q-9", "--amount", "1.00"],
            // An order reference no notification could carry (an escape sequence, a line break).
            ["orders", "expect", "unlimint", "Q\u{1B}[2J", "--amount", "1.00", "--currency", "USD"],
            ["orders", "expect", "unlimint", "Q\r9", "--amount", "1.00", "--currency", "USD"],
        ] {
            let result = try await ipnd(arguments + ["--config", config])
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
        }
        let noConfig = try await ipnd(["orders", "list", "--config", "/nonexistent/ipnd.yaml"])
        #expect(noConfig.status == 2)

        let noStore = try writeConfig("store:\n  path: never-created/ipnd.sqlite\nproviders:\n  unlimint:\n    - callback_secret: x\n")
        for arguments in [["orders", "list"], ["orders", "show", "unlimint", "Q-1"], ["notifications", "list"],
                          ["orders", "expect", "unlimint", "Q-1", "--amount", "1.00", "--currency", "USD"]] {
            let result = try await ipnd(arguments + ["--config", noStore])
            #expect(result.status == 3, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("never-created/ipnd.sqlite"), "\(result.stderr)")
        }
        let unknownAccount = try await ipnd(["orders", "expect", "unlimint", "Q-9", "--amount", "1.00", "--currency", "USD",
                                             "--account", "nobody", "--config", config])
        #expect(unknownAccount.status == 2)
        #expect(unknownAccount.stderr.contains("nobody"))
        try await daemon.stop()
    }

    @Test("orders expect while the daemon runs: 12.00 USD against 12.34 USD is a mismatch, 12.34 USD is applied", arguments: Backend.allCases)
    func expectFromTheCommandLine(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        let config = daemon.configPath
        let expect = try await ipnd(["orders", "expect", "unlimint", "X-1", "--amount", "12.34", "--currency", "USD", "--config", config])
        #expect(expect.status == 0, "\(expect.stderr)")
        #expect(expect.stdout.contains("12.34 USD"))
        #expect(try daemon.orderState("X-1") == "expected")

        let wrong = try await daemon.deliver("unlimint", order: "X-1", status: "COMPLETED", amount: Money(minor: 1200, currency: "USD"))
        #expect(wrong.text == "OK")
        var order = try parseJSONObject(try await ipnd(["orders", "show", "unlimint", "X-1", "--config", config, "--format", "json"]).stdout)
        #expect(order.string("state") == "expected")
        #expect(order["flags"] as? [String] == ["amount_mismatch"])
        #expect(order.objects("notifications").map { $0.string("verdict") } == ["mismatch"])
        #expect((order["expected"] as? JSONDict)?.string("amount") == "12.34")
        #expect(order.objects("transitions").count == 1)

        try await daemon.deliver("unlimint", order: "X-1", status: "COMPLETED", amount: Money(minor: 1234, currency: "USD"))
        order = try parseJSONObject(try await ipnd(["orders", "show", "unlimint", "X-1", "--config", config, "--format", "json"]).stdout)
        #expect(order.string("state") == "paid")
        #expect(order.objects("notifications").map { $0.string("verdict") } == ["mismatch", "applied"])

        // An expectation for a known order keeps its state; the daemon's next write still works.
        let again = try await ipnd(["orders", "expect", "unlimint", "X-1", "--amount", "12.34", "--currency", "USD", "--config", config])
        #expect(again.status == 0)
        #expect(again.stdout.contains("paid"))
        try await daemon.deliver("unlimint", order: "X-2", status: "COMPLETED")
        #expect(try daemon.orderState("X-2") == "paid")
        // Registered after it was paid 10.00 USD: the order is flagged and the command warns.
        let late = try await ipnd(["orders", "expect", "unlimint", "X-2", "--amount", "99.00", "--currency", "USD", "--config", config])
        #expect(late.status == 0)
        #expect(late.stderr.contains("warning: flagged amount_mismatch: order is paid with 10.00 USD, not the expected 99.00 USD"),
                "\(late.stderr)")
        order = try parseJSONObject(try await ipnd(["orders", "show", "unlimint", "X-2", "--config", config, "--format", "json"]).stdout)
        #expect(order["flags"] as? [String] == ["amount_mismatch"])
        #expect(order.string("state") == "paid")
        try await daemon.stop()
    }
}
