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
@testable import IPNConsole
import IPNCore
@testable import IPNServer
import Testing

/// The ops console over HTTP without a browser: sessions, CSRF, headers, escaping (issue 32).
/// tools/console_browser_test.py drives the same pages in Chromium (ConsoleBrowserTests).
@Suite("The ops console over HTTP (issue 32)")
struct ConsoleHTTPTests {
    static let policy = "default-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    @Test("signed out, a page leads to the sign-in form; a bad token is refused and logged, a good one opens a 12 h session")
    func signIn() async throws {
        let daemon = try await TestDaemon.start()
        let console = ConsoleClient(daemon)
        let signedOut = try await console.get("/orders?state=paid")
        #expect(signedOut.status == 303)
        #expect(signedOut.location == "/sign-in?next=%2Forders%3Fstate%3Dpaid")

        let form = try await console.get("/sign-in")
        #expect(form.status == 200 && form.text.contains(#"name="token""#))
        let signInCookie = try #require(form.setCookies.first { $0.hasPrefix("ipnd_signin=") })
        #expect(signInCookie.contains("HttpOnly") && signInCookie.contains("SameSite=Strict"))

        let refused = try await console.post("/sign-in", [("csrf", form.csrf ?? ""), ("next", "/orders"), ("token", "not-the-token")])
        #expect(refused.status == 401)
        #expect(refused.text.contains("That token is not accepted."))
        #expect(!refused.setCookies.contains { $0.hasPrefix("ipnd_session=") })
        #expect(console.cookies["ipnd_session"] == nil)
        let again = try await console.post("/sign-in", [("csrf", refused.csrf ?? ""), ("next", "/"), ("token", "still-not")])
        #expect(again.status == 401)
        // Each failure is logged with the address and the running count, never the token typed.
        let warnings = daemon.logs.captured.filter { $0.contains("console sign-in refused: token not accepted") }
        #expect(warnings.count == 2)
        #expect(warnings.last?.contains("peer=127.0.0.1") == true && warnings.last?.contains("failures=2") == true)
        #expect(!daemon.logs.captured.joined().contains("not-the-token"))

        let accepted = try await console.post("/sign-in", [("csrf", again.csrf ?? ""), ("next", "/orders?state=paid"), ("token", TestDaemon.opsToken)])
        #expect(accepted.status == 303 && accepted.location == "/orders?state=paid")
        let session = try #require(accepted.setCookies.first { $0.hasPrefix("ipnd_session=") })
        for attribute in ["HttpOnly", "SameSite=Strict", "Max-Age=43200", "Path=/"] {
            #expect(session.contains(attribute), "\(session)")
        }
        #expect(!session.contains("Secure"))
        let page = try await console.get("/orders?state=paid")
        #expect(page.status == 200 && page.text.contains("<h1>Orders</h1>"))
        // Signed in, the form leads on to the page asked for.
        let signedIn = try await console.get("/sign-in?next=/deliveries")
        #expect(signedIn.status == 303 && signedIn.location == "/deliveries")
        #expect(daemon.logs.captured.contains { $0.contains("console sign-in") && $0.contains("level=info") })
        try await daemon.stop()
    }

    @Test("the sign-in form refuses a POST without its own CSRF token, and a `next` leading off the console")
    func signInForm() async throws {
        let daemon = try await TestDaemon.start()
        let console = ConsoleClient(daemon)
        _ = try await console.get("/sign-in")
        let forged = try await console.post("/sign-in", [("csrf", "made-up"), ("next", "/"), ("token", TestDaemon.opsToken)])
        #expect(forged.status == 403 && console.cookies["ipnd_session"] == nil)
        let form = try await console.get("/sign-in?next=//elsewhere.example/")
        #expect(form.text.contains(#"name="next" value="/""#))
        let accepted = try await console.post("/sign-in", [("csrf", form.csrf ?? ""), ("next", "//elsewhere.example/"), ("token", TestDaemon.opsToken)])
        #expect(accepted.status == 303 && accepted.location == "/")
        try await daemon.stop()
    }

    @Test("with ops.console_secure_cookie the session cookie is Secure")
    func secureCookie() async throws {
        let secure = try await TestDaemon.start(opsYAML: "console_secure_cookie: true")
        let console = ConsoleClient(secure)
        let accepted = try await console.signIn(TestDaemon.opsToken)
        #expect(accepted.setCookies.first { $0.hasPrefix("ipnd_session=") }?.contains("Secure") == true)
        #expect(accepted.setCookies.allSatisfy { $0.contains("Secure") })
        try await secure.stop()
    }

    @Test("a session opens no door to the API; the API's bearer tokens keep working beside it")
    func apiStillNeedsBearer() async throws {
        let daemon = try await TestDaemon.start()
        try await daemon.deliver("unlimint", order: "API-1", status: "COMPLETED")
        let console = ConsoleClient(daemon)
        try await console.signIn(TestDaemon.opsToken)
        #expect(try await console.get("/").status == 200)
        let withCookie = try await console.get("/api/v1/orders")
        #expect(withCookie.status == 401 && withCookie.headers["WWW-Authenticate"] == ["Bearer"])
        let bearer = try await daemon.api("/api/v1/orders")
        #expect(bearer.status == 200 && bearer.text.contains("API-1"))
        // The API's answers carry none of the console's page headers.
        #expect(bearer.headers["Content-Security-Policy"].isEmpty)
        try await daemon.stop()
    }

    @Test("a POST without the session's CSRF token, or without a session, is refused and changes nothing")
    func csrf() async throws {
        let daemon = try await TestDaemon.start()
        try await daemon.deliver("unlimint", order: "CSRF-1", status: "NEW")
        let console = ConsoleClient(daemon)
        try await console.signIn(TestDaemon.opsToken)
        let page = try await console.get("/orders/unlimint/default/CSRF-1")
        let token = try #require(page.csrf)
        let path = "/orders/unlimint/default/CSRF-1/expectation"

        let missing = try await console.post(path, [("amount", "1.00"), ("currency", "USD")])
        #expect(missing.status == 403 && missing.text.contains("CSRF"))
        let wrong = try await console.post(path, [("csrf", token + "x"), ("amount", "1.00"), ("currency", "USD")])
        #expect(wrong.status == 403)
        let anonymous = ConsoleClient(daemon)
        let noSession = try await anonymous.post(path, [("csrf", token), ("amount", "1.00"), ("currency", "USD")])
        #expect(noSession.status == 401)
        #expect(try daemon.count("SELECT COUNT(*) FROM orders WHERE expected_amount_minor IS NOT NULL") == 0)
        #expect(daemon.logs.captured.contains { $0.contains("console form refused: missing or wrong CSRF token") })

        let done = try await console.post(path, [("csrf", token), ("amount", "1.00"), ("currency", "usd")])
        #expect(done.status == 303 && done.location == "/orders/unlimint/default/CSRF-1?done=expectation")
        let shown = try await ipnd(["orders", "show", "unlimint", "CSRF-1", "--format", "json", "--config", daemon.configPath])
        let expected = try parseJSONObject(shown.stdout)["expected"] as? JSONDict
        #expect(expected?.string("amount") == "1.00" && expected?.string("currency") == "USD")
        #expect(try await console.get(done.location ?? "").text.contains("Expectation registered."))
        try await daemon.stop()
    }

    @Test("sign-out ends the session, a replayed cookie included; so does taking its token out of the accepted ones")
    func sessionsEnd() async throws {
        let daemon = try await TestDaemon.start(opsTokens: [TestDaemon.opsToken, "second-token"])
        let console = ConsoleClient(daemon)
        try await console.signIn(TestDaemon.opsToken)
        let cookie = try #require(console.cookies["ipnd_session"])
        let page = try await console.get("/")
        let signedOut = try await console.post("/sign-out", [("csrf", page.csrf ?? "")])
        #expect(signedOut.status == 303 && signedOut.location == "/sign-in")
        #expect(console.cookies["ipnd_session"] == nil)
        console.setCookie("ipnd_session", cookie)
        #expect(try await console.get("/").status == 303)

        // A tampered cookie is no session either.
        let other = ConsoleClient(daemon)
        try await other.signIn("second-token")
        let genuine = try #require(other.cookies["ipnd_session"])
        other.setCookie("ipnd_session", "9" + genuine.dropFirst())
        #expect(try await other.get("/").status == 303)
        other.setCookie("ipnd_session", genuine)
        #expect(try await other.get("/").status == 200)

        // The token it signed in with is no longer accepted (a reload would do this): the
        // session ends with it, and the API refuses the token too.
        daemon.daemon.opsCredentials.replace(digests: [Crypto.digest(.sha256, Array(TestDaemon.opsToken.utf8))])
        #expect(try await other.get("/").status == 303)
        #expect(try await daemon.api("/api/v1/orders", token: "second-token").status == 401)
        #expect(try await daemon.api("/api/v1/orders").status == 200)
        try await daemon.stop()
    }

    @Test("every console answer forbids outside and inline content; a hostile reference is text in the HTML, hidden characters written out")
    func headersAndEscaping() async throws {
        let daemon = try await TestDaemon.start()
        let hostile = "<script>window.__ipndPwned=1</script>\"><img src=x onerror=\"window.__ipndPwned=2\">\u{202E}gnp.exe&amp;"
        try await daemon.deliver("unlimint", order: hostile, status: "COMPLETED")
        let console = ConsoleClient(daemon)
        for path in ["/sign-in", "/console.css", "/favicon.svg"] {
            let answer = try await console.get(path)
            #expect(answer.status == 200, "\(path)")
            #expect(answer.headers["Content-Security-Policy"] == [Self.policy], "\(path)")
            #expect(answer.headers["X-Content-Type-Options"] == ["nosniff"], "\(path)")
        }
        try await console.signIn(TestDaemon.opsToken)
        let orderPath = "/orders/unlimint/default/" + ConsoleClient.encode(hostile)
        for path in ["/", "/orders", "/orders?q=%3Cscript", orderPath, orderPath + "?raw=1", "/notifications", "/notifications/1",
                     "/deliveries"] {
            let answer = try await console.get(path)
            #expect(answer.status == 200, "\(path): \(answer.text.prefix(300))")
            #expect(answer.headers["Content-Security-Policy"] == [Self.policy], "\(path)")
            #expect(answer.headers["Cache-Control"] == ["no-store"], "\(path)")
            #expect(answer.headers["Content-Type"] == ["text/html; charset=utf-8"], "\(path)")
            // No markup from the reference, no inline script or style anywhere, the reference
            // shown escaped with its direction override written out.
            #expect(!answer.text.contains("<script") && !answer.text.contains("<img") && !answer.text.contains("<style"), "\(path)")
            #expect(!answer.text.contains(" style="), "\(path)")
            #expect(answer.text.range(of: #"<[a-zA-Z][^>]*\son[a-z]+="#, options: .regularExpression) == nil, "\(path)")
            #expect(!answer.text.unicodeScalars.contains("\u{202E}"), "\(path)")
        }
        let order = try await console.get(orderPath)
        #expect(order.text.contains(
            "&lt;script&gt;window.__ipndPwned=1&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=&quot;window.__ipndPwned=2&quot;&gt;\\u{202e}gnp.exe&amp;amp;"))
        // The search box keeps what was typed, escaped.
        #expect(try await console.get("/orders?q=%22%3E%3Cb%3E").text.contains(#"value="&quot;&gt;&lt;b&gt;""#))
        try await daemon.stop()
    }

    @Test("the order search finds references with spaces and reserved characters, sent as a browser's GET form sends them")
    func searchAsABrowserSends() async throws {
        let daemon = try await TestDaemon.start()
        let references = ["A B", "A+B", "A&B", "A%B", "A/B", "A#B", "A=B?c", "A B é", "AB"]
        for reference in references {
            try await daemon.deliver("unlimint", order: reference, status: "COMPLETED")
        }
        let console = ConsoleClient(daemon)
        try await console.signIn(TestDaemon.opsToken)
        for reference in references {
            // A GET form's query: a space as `+`, every other reserved byte as %XX.
            let query = String(decoding: FormBody.encode([("q", reference)]), as: UTF8.self)
            let page = try await console.get("/orders?" + query)
            #expect(page.status == 200, "\(query)")
            // The box shows what was typed, and the list holds the reference searched for (a
            // prefix search: "A B" finds "A B é" too) and none that only looks alike encoded.
            #expect(page.text.contains(#"value="\#(HTMLText.escape(reference))""#), "\(query)")
            let listed = Set(references.filter { page.text.contains(#"href="/orders/unlimint/default/\#(ConsoleClient.encode($0))""#) })
            #expect(listed == Set(references.filter { $0.hasPrefix(reference) }), "\(query)")
        }
        // Percent-escapes decode too (a space as %20, as the console's own links write it), and a
        // malformed escape typed by hand is searched for as written.
        let escaped = try await console.get("/orders?q=A%20B")
        #expect(escaped.text.contains(#"href="/orders/unlimint/default/A%20B""#))
        #expect(!escaped.text.contains(#"href="/orders/unlimint/default/A%2BB""#))
        #expect(try await console.get("/orders?q=A%B").text.contains(#"href="/orders/unlimint/default/A%25B""#))
        try await daemon.stop()
    }

    @Test("a filter value that cannot be used is a 400 naming what would be; an unknown order or notification a 404")
    func badInput() async throws {
        let daemon = try await TestDaemon.start()
        let console = ConsoleClient(daemon)
        try await console.signIn(TestDaemon.opsToken)
        let cases: [(String, Int, String)] = [
            ("/orders?state=payed", 400, "state &quot;payed&quot; is not one of"),
            ("/orders?provider=paypal", 400, "provider &quot;paypal&quot; is not one of"),
            ("/orders?since=yesterday", 400, "is not an ISO 8601 time"),
            ("/notifications?verdict=ok", 400, "verdict &quot;ok&quot; is not one of"),
            ("/deliveries?target=Bad%20Name", 400, "is not a delivery target name"),
            ("/notifications?account=nobody", 400, "no account &quot;nobody&quot; is configured"),
            ("/orders?provider=citcon&account=shop2", 400, "no account &quot;shop2&quot; is configured for citcon"),
            ("/orders/unlimint/default/NOPE", 404, "No order &quot;NOPE&quot;"),
            ("/notifications/999", 404, "There is no notification 999."),
            ("/notifications/x", 404, "is not a notification id"),
        ]
        for (path, status, text) in cases {
            let answer = try await console.get(path)
            #expect(answer.status == status, "\(path)")
            #expect(answer.text.contains(text), "\(path): \(answer.text.prefix(2000))")
        }
        try await daemon.stop()
    }
}
