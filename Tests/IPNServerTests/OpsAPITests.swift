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
import IPNTestSupport
import IPNCore
import NIOCore
import NIOHTTP1
import Testing

@Suite("Ops API: bearer auth, orders, notifications, expectations, pagination (issue 4)")
struct OpsAPITests {
    @Test("no, wrong or malformed token is 401 with WWW-Authenticate: Bearer; health and metrics need none", arguments: Backend.allCases)
    func authentication(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        try await daemon.deliver("unlimint", order: "AUTH-1", status: "COMPLETED")
        let guarded = ["/api/v1/orders", "/api/v1/notifications", "/api/v1/orders/unlimint/AUTH-1", "/api/v1/no-such-endpoint"]
        for path in guarded {
            for headers in [[], [("Authorization", "Bearer wrong-token")], [("Authorization", "Basic dGVzdC1vcHMtdG9rZW4=")],
                            [("Authorization", "Bearer")], [("Authorization", "test-ops-token")],
                            [("Authorization", "Bearer test-ops-token"), ("Authorization", "Bearer test-ops-token")]] {
                let answer = try await daemon.get(path, ops: true, headers: headers)
                #expect(answer.status == 401, "\(path) \(headers)")
                #expect(answer.headers["WWW-Authenticate"] == ["Bearer"], "\(path) \(headers)")
                #expect(!answer.text.contains("AUTH-1"))
            }
        }
        // Each refusal is logged, without what the Authorization header held.
        let refusals = daemon.logs.captured.filter { $0.contains("ops API request refused") }
        #expect(refusals.count == guarded.count * 6)
        #expect(refusals.allSatisfy { $0.contains("status=401") && !$0.contains("wrong-token") && !$0.contains("dGVzdC1vcHMtdG9rZW4") })
        #expect(try await daemon.api("/api/v1/orders").status == 200)
        #expect(try await daemon.get("/api/v1/orders", ops: true, headers: [("Authorization", "bearer  test-ops-token")]).status == 200)
        let unknown = try await daemon.api("/api/v1/no-such-endpoint")
        #expect(unknown.status == 404)
        #expect(unknown.text == #"{"error":"no such route: /api/v1/no-such-endpoint"}"#)
        // A route taken with the wrong method: 405 naming the methods it takes.
        let token = [("Authorization", "Bearer \(TestDaemon.opsToken)")]
        for (method, path, allow) in [
            (HTTPMethod.POST, "/api/v1/orders/unlimint/AUTH-1/expectation", "PUT"),
            (.GET, "/api/v1/orders/unlimint/AUTH-1/expectation", "PUT"),
            (.PUT, "/api/v1/orders/unlimint/AUTH-1", "GET, HEAD"),
            (.DELETE, "/api/v1/orders", "GET, HEAD"),
            (.POST, "/metrics", "GET, HEAD"),
        ] {
            let answer = try await daemon.send(method, path, body: method == .GET ? nil : [], headers: token, port: daemon.ports.ops)
            #expect(answer.status == 405, "\(method) \(path)")
            #expect(answer.headers["Allow"] == [allow], "\(method) \(path)")
            #expect(answer.text == #"{"error":"method not allowed"}"#)
        }
        for path in ["/metrics", "/api/v1/orders", "/api/v1/orders/unlimint/AUTH-1"] {
            let head = try await daemon.send(.HEAD, path, body: nil, headers: token, port: daemon.ports.ops)
            #expect(head.status == 200, "\(path)")
            #expect(head.body.isEmpty)
        }

        let put = try await daemon.send(.PUT, ops: "/api/v1/orders/unlimint/AUTH-2/expectation",
                                        body: #"{"amount":"1.00","currency":"USD"}"#, token: nil)
        #expect(put.status == 401)
        #expect(try daemon.orderState("AUTH-2") == nil)

        for path in ["/metrics", "/healthz", "/readyz"] {
            #expect(try await daemon.get(path, ops: true).status == 200, "\(path)")
        }
        // The provider-facing listener does not serve the ops API at all.
        #expect(try await daemon.get("/api/v1/orders", headers: [("Authorization", "Bearer \(TestDaemon.opsToken)")]).status == 404)
        try await daemon.stop()
    }

    @Test("the router skips empty path segments, so the token check does too: //api/v1/... is the API", arguments: Backend.allCases)
    func emptySegmentsDoNotBypassTheToken(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        try await OrderLifecycleHTTPTests.unlimint(daemon, UnlimintRequests.body(order: "AUTH-9", id: "p9", status: "COMPLETED"))
        for path in ["//api/v1/orders", "///api/v1/notifications?include=raw", "//api/v1/orders/unlimint/AUTH-9?include=raw",
                     "/api//v1/orders", "//API/v1/orders"] {
            let get = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
            let answer = await RawHTTP.exchange(port: daemon.ports.ops, get)
            #expect(answer.status == 401 || answer.status == 404, "\(path): \(answer)")
            #expect(!answer.text.contains("AUTH-9"), "\(path): \(answer)")
        }
        // With the token, the doubled slash reaches the API, so without it the 401 above is the check's.
        let withToken = Array("GET //api/v1/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(TestDaemon.opsToken)\r\nConnection: close\r\n\r\n".utf8)
        let allowed = await RawHTTP.exchange(port: daemon.ports.ops, withToken)
        #expect(allowed.status == 200, "\(allowed)")
        #expect(allowed.text.contains("AUTH-9"))
        let body = Array(#"{"amount":"0.01","currency":"USD"}"#.utf8)
        let put = Array("PUT //api/v1/orders/unlimint/AUTH-10/expectation HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n".utf8) + body
        #expect(await RawHTTP.exchange(port: daemon.ports.ops, put).status == 401)
        #expect(try daemon.orderState("AUTH-10") == nil)
        try await daemon.stop()
    }

    @Test("a refused request's body is not read: 401 at once, then the connection is closed", arguments: Backend.allCases)
    func refusedBodyNotRead(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        // Claims 50 MB and sends a little: the 401 comes at once, not at the request deadline.
        let put = Array(("PUT /api/v1/orders/unlimint/BIG-1/expectation HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + "Content-Type: application/json\r\nContent-Length: 50000000\r\n\r\n{\"amount\":").utf8)
        let started = Date()
        let answers = await RawHTTP.onConnection(port: daemon.ports.ops) { fd in
            RawHTTP.sendAll(fd, put)
            var answer = RawHTTP.readAnswer(fd, timeout: 5)
            answer.closed = answer.closed || RawHTTP.readUntilClosed(fd, timeout: 3).closed
            return [answer]
        }
        #expect(answers.first?.status == 401, "\(answers)")
        #expect(answers.first?.header("Connection") == "close", "\(answers)")
        #expect(answers.first?.closed == true, "\(answers)")
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(try daemon.orderState("BIG-1") == nil)
        try await daemon.stop()
    }

    @Test("with no tokens configured the API refuses everyone", arguments: Backend.allCases)
    func noTokensConfigured(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend, opsTokens: [])
        for token in [TestDaemon.opsToken, "", "anything"] {
            let answer = try await daemon.api("/api/v1/orders", token: token)
            #expect(answer.status == 401)
            #expect(answer.headers["WWW-Authenticate"] == ["Bearer"])
        }
        #expect(try await daemon.get("/metrics", ops: true).status == 200)
        #expect(daemon.logs.captured.contains { $0.contains("level=warning") && $0.contains("tokens_sha256") })
        try await daemon.stop()
    }

    @Test("GET /api/v1/orders: the fields of product.md, newest first, every filter", arguments: Backend.allCases)
    func listOrders(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        try await daemon.deliver("unlimint", order: "L-1", status: "COMPLETED")
        try await daemon.deliver("alipay", order: "L-2", status: "F", amount: Money(minor: 4200, currency: "SGD"))
        try await daemon.deliver("citcon", order: "L-3", status: "success")
        try await daemon.deliver("ipay88", order: "L-4", status: "6", amount: Money(minor: 127_899, currency: "MYR"))
        try await daemon.deliverShop2(order: "L-5")
        try await daemon.deliver("juspay", order: "L-6", status: "CHARGED", amount: Money(minor: 60000, currency: "INR"))
        // A forged notification creates no order.
        _ = try await daemon.post("/ipn/unlimint", body: UnlimintRequests.body(order: "L-X", id: "x", status: "COMPLETED"),
                                  headers: UnlimintRequests.headers(for: [1, 2, 3]))

        let all = try await daemon.apiObject("/api/v1/orders")
        #expect(all.keySet == ["items", "next_cursor"])
        #expect(all.isNull("next_cursor"))
        let items = all.objects("items")
        #expect(items.map { $0.string("order_ref") } == ["L-6", "L-5", "L-4", "L-3", "L-2", "L-1"])
        for item in items { #expect(item.keySet == SpecFields.order) }

        let first = try #require(items.last)
        #expect(first.string("provider") == "unlimint")
        #expect(first.string("account") == "default")
        #expect(first.string("state") == "paid")
        #expect(first.int("amount_minor") == 1000)
        #expect(first.string("amount") == "10.00")
        #expect(first.string("currency") == "USD")
        #expect(first.int("refunded_minor") == 0)
        #expect(first.isNull("expected"))
        #expect((first["flags"] as? [Any])?.isEmpty == true)
        let created = try #require(first.string("created_at"))
        #expect(created.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$"#, options: .regularExpression) != nil, "\(created)")
        #expect(items.first { $0.string("order_ref") == "L-4" }?.string("amount") == "1278.99")

        func refs(_ query: String) async throws -> [String] {
            try await daemon.apiObject("/api/v1/orders?\(query)").objects("items").compactMap { $0.string("order_ref") }
        }
        #expect(try await refs("provider=alipay") == ["L-2"])
        #expect(try await refs("provider=unlimint") == ["L-5", "L-1"])
        #expect(try await refs("provider=unlimint&account=shop2") == ["L-5"])
        #expect(try await refs("state=paid") == ["L-6", "L-5", "L-3", "L-1"])
        #expect(try await refs("state=failed") == ["L-2"])
        #expect(try await refs("state=pending&provider=ipay88") == ["L-4"])
        #expect(try await refs("since=2000-01-01").count == 6)
        #expect(try await refs("since=2999-01-01T00:00:00Z") == [])
        #expect(try await refs("limit=2") == ["L-6", "L-5"])

        for bad in ["state=bogus", "provider=paypal", "since=yesterday", "limit=0", "limit=1001", "limit=ten", "cursor=%%%",
                    "cursor=bjo1"] {
            let answer = try await daemon.api("/api/v1/orders?\(bad)")
            #expect(answer.status == 400, "\(bad)")
            #expect(try parseJSONObject(answer.text).string("error")?.isEmpty == false, "\(bad)")
        }
        try await daemon.stop()
    }

    @Test("GET /api/v1/orders/{provider}/{order_ref}: transitions, notifications, raw bodies on request, 404", arguments: Backend.allCases)
    func showOrder(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        let request = try daemon.simulated("unlimint", order: "S-1", status: "IN_PROGRESS", amount: Money(minor: 1000, currency: "USD"),
                                           uid: "pay-1")
        #expect(try await daemon.post(request).status == 200)
        #expect(try await daemon.post(request).status == 200)  // duplicate
        try await daemon.deliver("unlimint", order: "S-1", status: "COMPLETED", uid: "pay-1b")

        let order = try await daemon.apiObject("/api/v1/orders/unlimint/S-1")
        #expect(order.keySet == SpecFields.orderDetail)
        #expect(order.string("state") == "paid")
        let transitions = order.objects("transitions")
        #expect(transitions.count == 2)
        for transition in transitions { #expect(transition.keySet == SpecFields.transition) }
        #expect(transitions[0].isNull("from"))
        #expect(transitions[0].string("to") == "pending")
        #expect(transitions[1].string("from") == "pending")
        #expect(transitions[1].string("to") == "paid")
        let notifications = order.objects("notifications")
        #expect(notifications.map { $0.string("verdict") } == ["applied", "duplicate", "applied"])
        #expect(notifications.map { $0.string("provider_status") } == ["IN_PROGRESS", "IN_PROGRESS", "COMPLETED"])
        for notification in notifications { #expect(notification.keySet == SpecFields.notification) }
        #expect(transitions[0].int("notification_id") == notifications[0].int("id"))
        #expect(transitions[1].int("notification_id") == notifications[2].int("id"))
        #expect(notifications[0].string("client_ip") == "127.0.0.1")
        #expect(notifications[1].isNull("reason"))

        let raw = try await daemon.apiObject("/api/v1/orders/unlimint/S-1?include=raw")
        let first = try #require(raw.objects("notifications").first)
        #expect(first.string("raw_body") == String(decoding: request.body, as: UTF8.self))
        #expect(first.string("raw_body_base64").flatMap { Data(base64Encoded: $0) } == Data(request.body))
        let headers = try #require(first["raw_headers"] as? [[String]])
        #expect(headers.contains(["signature", request.headers.first { $0.name == "Signature" }?.value ?? "?"]))
        // A mistyped include is refused, not answered without the bodies.
        for path in ["/api/v1/orders/unlimint/S-1?include=RAW", "/api/v1/notifications?include=raw,body"] {
            let refused = try await daemon.api(path)
            #expect(refused.status == 400, "\(path)")
            #expect(try parseJSONObject(refused.text).string("error")?.contains("is not one of: raw") == true, "\(refused.text)")
        }

        let missing = try await daemon.api("/api/v1/orders/unlimint/NOPE")
        #expect(missing.status == 404)
        #expect(try parseJSONObject(missing.text).string("error")?.contains("NOPE") == true)
        #expect(try await daemon.api("/api/v1/orders/unlimint/S-1?account=shop2").status == 404)

        // References with spaces and slashes travel percent-encoded.
        try await daemon.deliverShop2(order: "R 1/2")
        #expect(try await daemon.api("/api/v1/orders/unlimint/R%201%2F2").status == 404)
        let odd = try await daemon.apiObject("/api/v1/orders/unlimint/R%201%2F2?account=shop2")
        #expect(odd.string("order_ref") == "R 1/2")
        #expect(odd.string("account") == "shop2")
        try await daemon.stop()
    }

    @Test("GET /api/v1/notifications: verdict, provider and account filters; rejected ones with their reason", arguments: Backend.allCases)
    func listNotifications(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        try await daemon.deliver("unlimint", order: "N-1", status: "COMPLETED")
        try await daemon.deliver("citcon", order: "N-2", status: "success")
        let forged = UnlimintRequests.body(order: "N-3", id: "f", status: "COMPLETED")
        #expect(try await daemon.post("/ipn/unlimint", body: forged, headers: UnlimintRequests.headers(for: forged, secret: "guess")).status == 400)

        let all = try await daemon.apiObject("/api/v1/notifications").objects("items")
        #expect(all.map { $0.string("verdict") } == ["rejected", "applied", "applied"])
        for item in all { #expect(item.keySet == SpecFields.notification) }
        let rejected = try await daemon.apiObject("/api/v1/notifications?verdict=rejected").objects("items")
        #expect(rejected.count == 1)
        #expect(rejected.first?.string("reason") == "bad_signature")
        #expect(rejected.first?.string("provider") == "unlimint")
        #expect(try await daemon.apiObject("/api/v1/notifications?provider=citcon").objects("items").map { $0.string("order_ref") } == ["N-2"])
        #expect(try await daemon.apiObject("/api/v1/notifications?account=shop2").objects("items").isEmpty)
        let withRaw = try await daemon.apiObject("/api/v1/notifications?verdict=rejected&include=raw").objects("items")
        #expect(withRaw.first?.string("raw_body") == String(decoding: forged, as: UTF8.self))
        #expect(try await daemon.api("/api/v1/notifications?verdict=maybe").status == 400)
        // An orders cursor is not a notifications cursor.
        let ordersPage = try await daemon.apiObject("/api/v1/orders?limit=1")
        let ordersCursor = try #require(ordersPage.string("next_cursor"))
        #expect(try await daemon.api("/api/v1/notifications?cursor=\(ordersCursor)").status == 400)
        try await daemon.stop()
    }

    @Test("cursor pagination: pages add up to the whole list, in order, without repeats", arguments: Backend.allCases)
    func pagination(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        for index in 1...7 { try await daemon.deliver("unlimint", order: "P-\(index)", status: "COMPLETED") }
        let orders = try await daemon.allPages("/api/v1/orders", limit: 3)
        #expect(orders.pageSizes == [3, 3, 1])
        #expect(orders.items.compactMap { $0.string("order_ref") } == (1...7).reversed().map { "P-\($0)" })
        let exact = try await daemon.allPages("/api/v1/orders", limit: 7)
        #expect(exact.pageSizes == [7])
        let notifications = try await daemon.allPages("/api/v1/notifications?verdict=applied", limit: 2)
        #expect(notifications.pageSizes == [2, 2, 2, 1])
        let ids = notifications.items.compactMap { $0.int("id") }
        #expect(ids == ids.sorted(by: >))
        #expect(Set(ids).count == 7)
        try await daemon.stop()
    }

    @Test("pagination is stable while notifications keep arriving", arguments: Backend.allCases)
    func paginationUnderConcurrentInserts(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        for index in 1...20 { try await daemon.deliver("unlimint", order: "C-\(index)", status: "COMPLETED") }
        let before = Set(try await daemon.apiObject("/api/v1/orders?limit=1000").objects("items").compactMap { $0.string("order_ref") })
        let beforeNotifications = Set(try await daemon.apiObject("/api/v1/notifications?limit=1000").objects("items").compactMap { $0.int("id") })

        @Sendable func insertMore() async throws {
            for index in 1...20 { try await daemon.deliver("unlimint", order: "D-\(index)", status: "COMPLETED") }
        }
        async let inserts: Void = insertMore()
        async let orderPages = daemon.allPages("/api/v1/orders", limit: 3)
        async let notificationPages = daemon.allPages("/api/v1/notifications", limit: 3)
        try await inserts
        let orders = try await orderPages.items
        let notifications = try await notificationPages.items

        let refs = orders.compactMap { $0.string("order_ref") }
        #expect(Set(refs).count == refs.count, "an order appeared twice")
        #expect(before.isSubset(of: Set(refs)), "an order that existed before paging was skipped")
        let ids = notifications.compactMap { $0.int("id") }
        #expect(ids == ids.sorted(by: >))
        #expect(Set(ids).count == ids.count)
        #expect(beforeNotifications.isSubset(of: Set(ids)))
        // Pages only reach below the first page's top: later inserts never shift them.
        let afterwards = try await daemon.allPages("/api/v1/orders", limit: 1000)
        #expect(afterwards.items.count == 40)
        try await daemon.stop()
    }

    @Test("PUT expectation 12.34 USD; a paid notification for 12.00 USD is a mismatch: flagged, acknowledged, no transition", arguments: Backend.allCases)
    func mismatch(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        let put = try await daemon.send(.PUT, ops: "/api/v1/orders/unlimint/M-1/expectation",
                                        body: #"{"account":"default","amount":"12.34","currency":"USD"}"#)
        #expect(put.status == 200, "\(put.text)")
        let registered = try parseJSONObject(put.text)
        #expect(registered.keySet == SpecFields.order)
        #expect(registered.string("state") == "expected")
        let expected = try #require(registered["expected"] as? JSONDict)
        #expect(expected.keySet == SpecFields.expected)
        #expect(expected.int("amount_minor") == 1234)
        #expect(expected.string("amount") == "12.34")
        #expect(expected.string("currency") == "USD")

        let wrong = try await daemon.deliver("unlimint", order: "M-1", status: "COMPLETED", amount: Money(minor: 1200, currency: "USD"))
        #expect(wrong.text == "OK")  // acknowledged: it is authentic, retrying cannot fix it
        var order = try await daemon.apiObject("/api/v1/orders/unlimint/M-1")
        #expect(order.string("state") == "expected")
        #expect(order["flags"] as? [String] == ["amount_mismatch"])
        #expect(order.objects("transitions").count == 1)
        #expect(order.objects("transitions").first?.string("to") == "expected")
        #expect(order.objects("transitions").first?.isNull("notification_id") == true)
        #expect(order.objects("notifications").map { $0.string("verdict") } == ["mismatch"])
        #expect(order.objects("notifications").first?.string("reason") == "amount_mismatch")
        #expect(daemon.logs.captured.contains { $0.contains("level=warning") && $0.contains("verdict=mismatch") })

        let otherCurrency = try await daemon.deliver("unlimint", order: "M-1", status: "COMPLETED", amount: Money(minor: 1234, currency: "EUR"))
        #expect(otherCurrency.text == "OK")
        #expect(try daemon.orderState("M-1") == "expected")

        try await daemon.deliver("unlimint", order: "M-1", status: "COMPLETED", amount: Money(minor: 1234, currency: "USD"))
        order = try await daemon.apiObject("/api/v1/orders/unlimint/M-1")
        #expect(order.string("state") == "paid")
        #expect(order.objects("notifications").map { $0.string("verdict") } == ["mismatch", "mismatch", "applied"])
        #expect(order.objects("transitions").map { $0.string("to") } == ["expected", "paid"])
        #expect(order["flags"] as? [String] == ["amount_mismatch"])  // the flag stays for people to look at

        let metrics = try parsePrometheus(try await daemon.get("/metrics", ops: true).text)
        #expect(metrics.value("ipnd_notifications_total", ["provider": "unlimint", "verdict": "mismatch"]) == 2)
        try await daemon.stop()
    }

    @Test("PUT expectation on an order already known keeps its state; bad bodies are 400, unknown accounts 404", arguments: Backend.allCases)
    func expectationErrors(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend)
        try await daemon.deliver("unlimint", order: "E-1", status: "IN_PROGRESS")
        let put = try await daemon.send(.PUT, ops: "/api/v1/orders/unlimint/E-1/expectation", body: #"{"amount":"10.00","currency":"USD"}"#)
        #expect(put.status == 200)
        #expect(try parseJSONObject(put.text).string("state") == "pending")
        try await daemon.deliver("unlimint", order: "E-1", status: "COMPLETED")
        #expect(try daemon.orderState("E-1") == "paid")

        let shop2 = try await daemon.send(.PUT, ops: "/api/v1/orders/unlimint/E-2/expectation",
                                          body: #"{"account":"shop2","amount":5,"currency":"EUR"}"#)
        #expect(shop2.status == 200, "\(shop2.text)")
        #expect(try daemon.orderState("E-2", account: "shop2") == "expected")

        for (body, status) in [
            ("not json", 400), (#"{"amount":"12.345","currency":"USD"}"#, 400), (#"{"amount":"12.34"}"#, 400),
            (#"{"currency":"USD"}"#, 400), (#"{"amount":"12.34","currency":"XYZ"}"#, 400),
            (#"{"amount":"12.34","currency":"USD","acount":"shop2"}"#, 400),
            (#"{"account":"nobody","amount":"12.34","currency":"USD"}"#, 404),
        ] {
            let answer = try await daemon.send(.PUT, ops: "/api/v1/orders/unlimint/E-3/expectation", body: body)
            #expect(answer.status == status, "\(body): \(answer.text)")
            #expect(try parseJSONObject(answer.text).string("error") != nil)
        }
        let paypal = try await daemon.send(.PUT, ops: "/api/v1/orders/paypal/E-3/expectation",
                                           body: #"{"amount":"1.00","currency":"USD"}"#)
        #expect(paypal.status == 404)
        #expect(try parseJSONObject(paypal.text).string("error")?.hasPrefix(#"provider "paypal" is not one of"#) == true, "\(paypal.text)")
        #expect(try daemon.orderState("E-3") == nil)
        // An order reference no notification could carry: 400, nothing stored (a NUL used to
        // leave an order that no lookup could find, answered 503).
        for ref in ["E%00x", "E%1B%5B2J", "E%0D%0Ax", "E%C2%9Bx", String(repeating: "R", count: 257)] {
            let answer = try await daemon.send(.PUT, ops: "/api/v1/orders/unlimint/\(ref)/expectation",
                                               body: #"{"amount":"1.00","currency":"USD"}"#)
            #expect(answer.status == 400, "\(ref): \(answer.text)")
            #expect(try parseJSONObject(answer.text).string("error")?.contains("no control characters") == true)
        }
        #expect(try daemon.count("SELECT COUNT(*) FROM orders") == 2)  // E-1 and E-2
        try await daemon.stop()
    }
}
