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
import Testing

/// `ops.proxy_auth`: the person an authenticating proxy names, believed from its address only.
/// The test's "proxy" is a client bound to 127.0.0.2 (the trusted address); a client on
/// 127.0.0.1 stands for everyone else.
@Suite("Proxy identity: trusted and untrusted addresses, groups, roles (issue 43)", .heavy)
struct ProxyIdentityTests {
    static let proxyYAML = """
        proxy_auth:
            trusted_proxies: [127.0.0.2/32]
            user_header: X-Auth-Request-Email
            groups_header: X-Auth-Request-Groups
            roles:
              payments ops: operator
              support: viewer
              payments-admins: admin
            users:
              carol@example.com: viewer
        """

    /// A request from 127.0.0.2 (the trusted proxy) to the ops listener.
    static func fromProxy(_ daemon: TestDaemon, _ path: String, method: String = "GET", headers: [(String, String)], body: String = "")
        async -> RawHTTP.Answer
    {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(body.utf8.count)\r\n\r\n"
        let bytes = Array((head + body).utf8)
        let port = daemon.ports.ops
        return await onDedicatedThread {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var local = RawHTTP.loopbackAddress(port: 0)
            local.sin_addr.s_addr = inet_addr("127.0.0.2")
            var remote = RawHTTP.loopbackAddress(port: port)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            let connected = withUnsafePointer(to: &remote) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0, connected == 0 else { return RawHTTP.Answer() }
            RawHTTP.sendAll(fd, bytes)
            return RawHTTP.readAnswer(fd, timeout: 30)
        }
    }

    @Test("a trusted proxy's person: groups with spaces, highest role wins, users override; no role is 403; an empty header names nobody",
          arguments: Backend.allCases)
    func trusted(backend: Backend) async throws {
        let daemon = try await TestDaemon.start(backend: backend, opsTokens: [], opsYAML: Self.proxyYAML)
        try await daemon.deliver("unlimint", order: "PX-1", status: "COMPLETED")
        func user(_ email: String, groups: String?) -> [(String, String)] {
            [("X-Auth-Request-Email", email)] + (groups.map { [("X-Auth-Request-Groups", $0)] } ?? [])
        }
        // " payments ops " trimmed, with a space inside; support + payments ops: operator wins.
        let operatorRaw = await Self.fromProxy(daemon, "/api/v1/orders/unlimint/PX-1?include=raw",
                                               headers: user("pat@example.com", groups: "support, payments ops ,unknown"))
        #expect(operatorRaw.status == 200, "\(operatorRaw)")
        // Support only: a viewer; raw is 403 naming the person.
        let viewerRaw = await Self.fromProxy(daemon, "/api/v1/orders/unlimint/PX-1?include=raw", headers: user("sam@example.com", groups: "support"))
        #expect(viewerRaw.status == 403)
        #expect(viewerRaw.text == #"{"error":"forbidden: notification.raw_read needs role operator; sam@example.com is viewer"}"#)
        // users overrides the groups: carol is a viewer though an admin by group.
        let carol = await Self.fromProxy(daemon, "/api/v1/audit", headers: user("carol@example.com", groups: "payments-admins"))
        #expect(carol.status == 403)
        let admin = await Self.fromProxy(daemon, "/api/v1/audit", headers: user("dana@example.com", groups: "payments-admins"))
        #expect(admin.status == 200)
        // In no mapped group: 403, for reads too.
        let nobody = await Self.fromProxy(daemon, "/api/v1/orders", headers: user("eve@example.com", groups: "marketing"))
        #expect(nobody.status == 403)
        #expect(nobody.text == #"{"error":"forbidden: order.read needs role viewer; eve@example.com has no role"}"#)
        // An empty user header names nobody: no bearer token either, so 401.
        let empty = await Self.fromProxy(daemon, "/api/v1/orders", headers: [("X-Auth-Request-Email", ""), ("X-Auth-Request-Groups", "support")])
        #expect(empty.status == 401)

        // The console opens without a sign-in, shows the person, offers no sign-out.
        let page = await Self.fromProxy(daemon, "/orders/unlimint/default/PX-1", headers: user("pat@example.com", groups: "payments ops"))
        #expect(page.status == 200)
        #expect(page.text.contains(#"<strong id="user-name">pat@example.com</strong> (<span id="user-role">operator</span>)"#))
        #expect(!page.text.contains("Sign out"))
        let csrf = try #require(page.text.range(of: #"name="csrf" value=""#).map { String(page.text[$0.upperBound...].prefix { $0 != "\"" }) })
        // CSRF still guards every POST: without the token 403, with it the expectation is registered.
        let form = "amount=3.00&currency=USD"
        let forged = await Self.fromProxy(daemon, "/orders/unlimint/default/PX-2/expectation", method: "POST",
                                          headers: user("pat@example.com", groups: "payments ops") + [("Content-Type", "application/x-www-form-urlencoded")],
                                          body: form + "&csrf=nope")
        #expect(forged.status == 403)
        #expect(try daemon.orderState("PX-2") == nil)
        let posted = await Self.fromProxy(daemon, "/orders/unlimint/default/PX-2/expectation", method: "POST",
                                          headers: user("pat@example.com", groups: "payments ops") + [("Content-Type", "application/x-www-form-urlencoded")],
                                          body: form + "&csrf=" + csrf)
        #expect(posted.status == 303, "\(posted)")
        #expect(try daemon.orderState("PX-2") == "expected")
        let set = try daemon.auditRows("order.expectation_set")
        #expect(set.first?[0] == "pat@example.com" && set.first?[1] == "operator" && set.first?[3] == "unlimint/default/PX-2")
        try await daemon.stop()
    }

    @Test("the identity headers of an untrusted address are ignored and counted; a bearer token still works there")
    func untrusted() async throws {
        let daemon = try await TestDaemon.start(opsTokens: [], opsYAML: OpsUsersFixture.yaml(extra: "  " + Self.proxyYAML.replacingOccurrences(of: "\n", with: "\n  ")))
        let spoofed = try await daemon.send(.GET, "/api/v1/audit", body: nil, headers: [
            ("X-Auth-Request-Email", "dana@example.com"), ("X-Auth-Request-Groups", "payments-admins"),
        ], port: daemon.ports.ops)
        #expect(spoofed.status == 401)
        let console = ConsoleClient(daemon)
        let page = try await console.send(.GET, "/", body: nil, headers: [("X-Auth-Request-Email", "dana@example.com"),
                                                                          ("X-Auth-Request-Groups", "payments-admins")])
        #expect(page.status == 303 && page.location?.hasPrefix("/sign-in") == true)
        let withToken = try await daemon.send(.GET, "/api/v1/orders", body: nil, headers: [
            ("X-Auth-Request-Email", "dana@example.com"), ("Authorization", "Bearer \(OpsUsersFixture.token(.viewer))"),
        ], port: daemon.ports.ops)
        #expect(withToken.status == 200)
        let metrics = try parsePrometheus(try await daemon.get("/metrics", ops: true).text)
        #expect(metrics.value("ipnd_ops_untrusted_identity_headers_total") == 3)
        try await daemon.stop()
    }
}
