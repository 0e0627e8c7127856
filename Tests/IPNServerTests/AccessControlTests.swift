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
@testable import IPNServer
@testable import IPNServerTestSupport
import IPNTestSupport
import NIOHTTP1
import Testing

/// Every route the ops listener serves, asked by each role and by nobody: allowed, or 401/403
/// with nothing changed. The route list comes from the daemon's own router, so a route added
/// without a rule in `OpsPermissions.table`, or without a request below, fails here.
@Suite("Who may do what: every route, every role (issue 43)", .heavy)
struct AccessControlTests {
    /// One request per route pattern (and its raw variant), as the test sends it.
    struct Call: Sendable {
        let route: OpsPermissions.Route
        let path: String
        let body: String?
        var form: [(String, String)] = []
        var raw = false

        var isConsole: Bool { !path.hasPrefix("/api/") && !["/healthz", "/readyz", "/metrics"].contains(path) }
        var action: OpsAction? { OpsPermissions.rule(method: route.method, path: route.path)?.action(wantsRaw: raw) }
    }

    static let calls: [Call] = [
        Call(route: .init("GET", "/healthz"), path: "/healthz", body: nil),
        Call(route: .init("GET", "/readyz"), path: "/readyz", body: nil),
        Call(route: .init("GET", "/metrics"), path: "/metrics", body: nil),
        Call(route: .init("GET", "/api/v1/orders"), path: "/api/v1/orders", body: nil),
        Call(route: .init("GET", "/api/v1/orders/{provider}/{order_ref}"), path: "/api/v1/orders/unlimint/ACC-1", body: nil),
        Call(route: .init("GET", "/api/v1/orders/{provider}/{order_ref}"), path: "/api/v1/orders/unlimint/ACC-1?include=raw", body: nil,
             raw: true),
        Call(route: .init("PUT", "/api/v1/orders/{provider}/{order_ref}/expectation"), path: "/api/v1/orders/unlimint/ACC-2/expectation",
             body: #"{"amount":"1.00","currency":"USD"}"#),
        Call(route: .init("POST", "/api/v1/orders/{provider}/{order_ref}/inquiries"), path: "/api/v1/orders/unlimint/ACC-1/inquiries", body: ""),
        Call(route: .init("GET", "/api/v1/notifications"), path: "/api/v1/notifications", body: nil),
        Call(route: .init("GET", "/api/v1/notifications"), path: "/api/v1/notifications?include=raw", body: nil, raw: true),
        Call(route: .init("POST", "/api/v1/notifications/reverify"), path: "/api/v1/notifications/reverify", body: #"{"apply":true}"#),
        Call(route: .init("GET", "/api/v1/events"), path: "/api/v1/events", body: nil),
        Call(route: .init("GET", "/api/v1/deliveries"), path: "/api/v1/deliveries", body: nil),
        Call(route: .init("POST", "/api/v1/deliveries/retry"), path: "/api/v1/deliveries/retry", body: #"{"ids":[1]}"#),
        Call(route: .init("GET", "/api/v1/inquiries"), path: "/api/v1/inquiries", body: nil),
        Call(route: .init("GET", "/api/v1/audit"), path: "/api/v1/audit", body: nil),
        Call(route: .init("GET", "/console.css"), path: "/console.css", body: nil),
        Call(route: .init("GET", "/favicon.svg"), path: "/favicon.svg", body: nil),
        Call(route: .init("GET", "/sign-in"), path: "/sign-in", body: nil),
        Call(route: .init("GET", "/"), path: "/", body: nil),
        Call(route: .init("GET", "/orders"), path: "/orders", body: nil),
        Call(route: .init("GET", "/orders/{provider}/{account}/{order_ref}"), path: "/orders/unlimint/default/ACC-1", body: nil),
        Call(route: .init("GET", "/orders/{provider}/{account}/{order_ref}"), path: "/orders/unlimint/default/ACC-1?raw=1", body: nil,
             raw: true),
        Call(route: .init("POST", "/orders/{provider}/{account}/{order_ref}/expectation"), path: "/orders/unlimint/default/ACC-3/expectation",
             body: "", form: [("amount", "2.00"), ("currency", "USD")]),
        Call(route: .init("POST", "/orders/{provider}/{account}/{order_ref}/inquiries"), path: "/orders/unlimint/default/ACC-1/inquiries",
             body: "", form: []),
        Call(route: .init("GET", "/notifications"), path: "/notifications", body: nil),
        Call(route: .init("GET", "/notifications/{id}"), path: "/notifications/1", body: nil),
        Call(route: .init("GET", "/notifications/{id}"), path: "/notifications/1?raw=1", body: nil, raw: true),
        Call(route: .init("GET", "/deliveries"), path: "/deliveries", body: nil),
        Call(route: .init("POST", "/deliveries/retry"), path: "/deliveries/retry", body: "", form: [("id", "1")]),
        Call(route: .init("POST", "/deliveries/resume"), path: "/deliveries/resume", body: "", form: [("target", "orders-app")]),
        Call(route: .init("GET", "/audit"), path: "/audit", body: nil),
        // Last: it ends the session. POST /sign-in is the form's own (its CSRF token is checked there).
        Call(route: .init("POST", "/sign-in"), path: "/sign-in", body: "", form: []),
        Call(route: .init("POST", "/sign-out"), path: "/sign-out", body: "", form: []),
    ]

    @Test("every route the ops router registers has a permission rule and a request in this test")
    func everyRouteHasARule() async throws {
        let daemon = try await TestDaemon.start()
        let routes = Set(daemon.daemon.opsRoutes)
        #expect(routes.count >= 30, "\(routes.count) routes")
        for route in routes {
            #expect(OpsPermissions.rule(method: route.method, path: route.path) != nil, "\(route) has no rule in OpsPermissions.table")
            #expect(Self.calls.contains { $0.route == route }, "\(route) has no request in AccessControlTests.calls")
        }
        // And the table names no route the router lacks.
        for route in OpsPermissions.table.keys { #expect(routes.contains(route), "\(route) is in the table but not served") }
        try await daemon.stop()
    }

    @Test("each role: allowed, or 403 naming action, role, user and role, with nothing changed; nobody: 401 or the sign-in form",
          arguments: Backend.allCases)
    func everyRouteEveryRole(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend, opsTokens: [], opsYAML: OpsUsersFixture.yaml())
        try await daemon.deliver("unlimint", order: "ACC-1", status: "COMPLETED")
        var table: [String] = []
        for role in [OpsRole?.none] + OpsRole.allCases.map(Optional.some) {
            let console = ConsoleClient(daemon)
            var csrf = ""
            if let role {
                let signedIn = try await console.signIn(OpsUsersFixture.token(role))
                #expect(signedIn.status == 303, "\(role) signs in")
                csrf = try #require(try await console.get("/").csrf)
            }
            for call in Self.calls {
                let before = try daemon.changeFingerprint()
                let status: Int
                let text: String
                if call.isConsole || call.path == "/sign-in" {
                    let answer = call.body == nil
                        ? try await console.get(call.path)
                        : try await console.post(call.path, call.form + [("csrf", csrf)])
                    (status, text) = (answer.status, answer.text)
                } else {
                    let method: HTTPMethod = call.route.method == "GET" ? .GET : call.route.method == "PUT" ? .PUT : .POST
                    let answer = try await daemon.send(
                        method, call.path, body: call.body.map { Array($0.utf8) },
                        headers: role.map { [("Authorization", "Bearer \(OpsUsersFixture.token($0))")] } ?? [], port: daemon.ports.ops)
                    (status, text) = (answer.status, answer.text)
                    if status == 401 { #expect(answer.headers["WWW-Authenticate"] == ["Bearer"], "\(call.path)") }
                }
                let label = "\(role?.rawValue ?? "nobody") \(call.route.method) \(call.path)"
                table.append("\(label): \(status)")
                if call.route == .init("POST", "/sign-in") { continue }
                guard let action = call.action else {
                    // Open routes answer anyone (the sign-in form sends one signed in on to the console).
                    #expect(status == 200 || (call.path == "/sign-in" && role != nil && status == 303), "\(label): \(status)")
                    continue
                }
                guard let role else {
                    if call.isConsole {
                        #expect(status == (call.body == nil ? 303 : 401), "\(label)")
                    } else {
                        #expect(status == 401, "\(label)")
                    }
                    #expect(try daemon.changeFingerprint() == before, "\(label) changed the store")
                    continue
                }
                if role >= action.role {
                    #expect(![401, 403].contains(status), "\(label): \(status) \(text.prefix(200))")
                } else {
                    #expect(status == 403, "\(label): \(status)")
                    #expect(try daemon.changeFingerprint() == before, "\(label) changed the store")
                    let refusal = "forbidden: \(action) needs role \(action.role); \(OpsUsersFixture.name(role)) is \(role)"
                    if call.isConsole {
                        #expect(text.contains(refusal), "\(label): \(text.prefix(300))")
                    } else {
                        #expect(text == #"{"error":"\#(refusal)"}"#, "\(label): \(text)")
                    }
                }
            }
        }
        // Every 403 is in the trail, by who asked and what for.
        let forbidden = try daemon.auditRows("auth.forbidden")
        #expect(forbidden.contains { $0[0] == "vera@example.com" && $0[1] == "viewer" && ($0[4] ?? "").contains("notification.raw_read") })
        #expect(forbidden.contains { $0[0] == "otto@example.com" && $0[1] == "operator" && ($0[4] ?? "").contains("audit.read") })
        #expect(!forbidden.contains { $0[0] == "ada@example.com" })
        #expect(try daemon.auditRows("auth.refused").contains { $0[0] == "unknown" && $0[2] == "refused" })
        let metrics = try parsePrometheus(try await daemon.get("/metrics", ops: true).text)
        #expect((metrics.value("ipnd_ops_forbidden_total", ["role": "viewer"]) ?? 0) > 0)
        #expect((metrics.value("ipnd_audit_records_total", ["action": "auth.forbidden", "outcome": "refused"]) ?? 0) > 0)
        print("access table (\(backend)):\n" + table.joined(separator: "\n"))
        try await daemon.stop()
    }

    @Test("pages show who is signed in and only what the role may use; a forged POST is 403 and recorded")
    func pagesByRole() async throws {
        let daemon = try await TestDaemon.start(opsTokens: [], opsYAML: OpsUsersFixture.yaml())
        try await daemon.deliver("unlimint", order: "ACC-1", status: "COMPLETED")
        var pages: [OpsRole: String] = [:]
        for role in OpsRole.allCases {
            let console = ConsoleClient(daemon)
            try await console.signIn(OpsUsersFixture.token(role))
            let page = try await console.get("/orders/unlimint/default/ACC-1")
            #expect(page.status == 200)
            #expect(page.text.contains(#"<strong id="user-name">\#(OpsUsersFixture.name(role))</strong> (<span id="user-role">\#(role)</span>)"#))
            #expect(page.text.contains("Sign out"))
            pages[role] = page.text
            let notification = try await console.get("/notifications/1")
            #expect(notification.text.contains(#"id="show-raw""#) == (role >= .operator), "\(role)")
            #expect(!notification.text.contains("Stored headers"), "\(role): raw only on request")
        }
        #expect(!pages[.viewer]!.contains("expectation-form") && !pages[.viewer]!.contains("show-raw"))
        #expect(!pages[.viewer]!.contains("/audit\""))
        #expect(pages[.operator]!.contains("expectation-form") && pages[.operator]!.contains("show-raw"))
        #expect(!pages[.operator]!.contains("href=\"/audit\""))
        #expect(pages[.admin]!.contains("href=\"/audit\""))

        // The access check's own console answers carry the console's headers too.
        let vera = ConsoleClient(daemon)
        try await vera.signIn(OpsUsersFixture.token(.viewer))
        let refused = try await vera.get("/audit")
        #expect(refused.status == 403)
        #expect(refused.headers["Content-Security-Policy"].first?.hasPrefix("default-src 'self'") == true)
        #expect(try await ConsoleClient(daemon).get("/orders").headers["X-Frame-Options"] == ["DENY"])

        // An operator's form without the session's CSRF token: 403, nothing registered, recorded.
        let otto = ConsoleClient(daemon)
        try await otto.signIn(OpsUsersFixture.token(.operator))
        let forged = try await otto.post("/orders/unlimint/default/F-1/expectation", [("amount", "1.00"), ("currency", "USD"), ("csrf", "forged")])
        #expect(forged.status == 403)
        #expect(try daemon.orderState("F-1") == nil)
        #expect(try daemon.auditRows("auth.forbidden").contains { $0[0] == "otto@example.com" && ($0[4] ?? "").contains("CSRF") })

        // The raw view is recorded before it is shown: which notification, by whom.
        let raw = try await otto.get("/notifications/1?raw=1")
        #expect(raw.status == 200 && raw.text.contains("Stored headers"))
        #expect(try daemon.auditRows("notification.raw_read").first?[0] == "otto@example.com")
        #expect(try daemon.auditRows("notification.raw_read").first?[3] == "notification:1")
        try await daemon.stop()
    }
}
