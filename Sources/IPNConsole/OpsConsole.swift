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
import HTTPTypes
import Hummingbird
import HummingbirdCore
import IPNConfig
import IPNCore
import IPNStore
import Logging
import Mustache
import NIOCore

/// The ops console (product.md section 10): server-rendered pages on the ops listener, behind a
/// sign-in with an ops token. It reads through `StoreReading` and changes things only through
/// the `Store` methods the CLI uses (expectations, retrying deliveries, resuming a target).
///
/// ```swift
/// let console = try OpsConsole(store: store, config: config, credentials: credentials,
///                              logger: logger, visibleText: VisibleText.escaping)
/// console.register(on: opsRouter)
/// ```
///
/// Pages: `GET /` (overview), `/orders`, `/orders/{provider}/{account}/{order_ref}`,
/// `/notifications`, `/notifications/{id}`, `/deliveries`; forms: `POST /sign-in`,
/// `/sign-out`, `/orders/{provider}/{account}/{order_ref}/expectation`, `.../inquiries` (ask the
/// provider now), `/deliveries/retry`,
/// `/deliveries/resume`; files: `/console.css`, `/favicon.svg`. Every answer carries a
/// Content-Security-Policy allowing nothing from elsewhere and no inline script or style.
public struct OpsConsole: Sendable {
    let store: any Store
    /// Asks a provider about an order now ("Ask the provider now").
    let asking: any InquiryAsking
    /// The config in force (a reload replaces it): the accounts the pages offer and accept.
    let live: LiveConfig
    var config: IPNDConfig { live.current }
    let credentials: OpsCredentials
    let logger: Logger
    let sessions: ConsoleSessions
    let throttle = SignInThrottle()
    let templates: MustacheLibrary

    /// Rows on a page of a list.
    static let pageSize = 50

    /// - Parameters:
    ///   - credentials: the accepted ops tokens, shared with the ops API's bearer check.
    ///   - visibleText: how text from outside is shown: hidden and direction-changing
    ///     characters written out (IPNServer passes `VisibleText.escaping`, the CLI's rule).
    public init(
        store: any Store, asking: any InquiryAsking, config: LiveConfig, credentials: OpsCredentials, logger: Logger,
        visibleText: @escaping @Sendable (String) -> String
    ) throws {
        self.store = store
        self.asking = asking
        live = config
        self.credentials = credentials
        self.logger = logger
        // ops.console_secure_cookie takes a restart (ReloadScope): the sessions keep the first one.
        sessions = ConsoleSessions(credentials: credentials, secureCookie: config.current.ops.consoleSecureCookie)
        // Templates name their content type when parsed: it must be registered first.
        MustacheContentTypes.register(HTMLText(visible: visibleText), named: HTMLText.contentTypeName)
        templates = try ConsoleTemplates.library()
    }

    /// Adds the console's routes to the ops listener's `router`. Its pages need a session;
    /// `/sign-in`, the stylesheet and the icon do not.
    public func register<Context: ConsoleRequestContext>(on router: Router<Context>) {
        let open = router.group().add(middleware: ConsoleHeadersMiddleware<Context>())
        open.get("/console.css") { _, _ in Self.asset(ConsoleAssets.stylesheet, contentType: "text/css; charset=utf-8") }
        open.get("/favicon.svg") { _, _ in Self.asset(ConsoleAssets.favicon, contentType: "image/svg+xml") }
        open.get("/sign-in") { request, _ in
            // Already signed in: on to where the form would have led.
            guard sessions.session(request, now: Self.nowSeconds()) == nil else {
                let next = FormQuery(request.uri)["next"].flatMap { URLText.isLocalPath($0) ? $0 : nil }
                return Self.redirect(next ?? "/")
            }
            return signInPage(request)
        }
        open.post("/sign-in") { request, context in await signIn(request, context: context) }

        let pages = open.group().add(middleware: ConsoleSessionMiddleware<Context>(sessions: sessions, logger: logger))
        pages.get("/") { request, _ in await overview(request) }
        pages.get("/orders") { request, _ in await ordersPage(request) }
        pages.get("/orders/:provider/:account/:order_ref") { request, context in
            await orderPage(request, key: OrderKey(context))
        }
        pages.post("/orders/:provider/:account/:order_ref/expectation") { request, context in
            await registerExpectation(request, key: OrderKey(context))
        }
        pages.post("/orders/:provider/:account/:order_ref/inquiries") { request, context in
            await askProvider(request, key: OrderKey(context))
        }
        pages.get("/notifications") { request, _ in await notificationsPage(request) }
        pages.get("/notifications/:id") { request, context in
            await notificationPage(request, id: context.parameters.get("id") ?? "")
        }
        pages.get("/deliveries") { request, _ in await deliveriesPage(request) }
        pages.post("/deliveries/retry") { request, _ in await retryDeliveries(request) }
        pages.post("/deliveries/resume") { request, _ in await resumeTarget(request) }
        pages.post("/sign-out") { request, _ in signOut(request) }
    }

    // MARK: Rendering

    /// `template` rendered with `page` in the layout, as an HTML answer.
    func render<Body: Sendable>(
        _ template: String, title: String, current: String, request: Request, page: Body, status: HTTPResponse.Status = .ok,
        error: String? = nil
    ) -> Response {
        let frame = PageFrame(
            pageTitle: title, signedIn: true, navItems: NavItem.all(current: current),
            csrfToken: sessions.session(request, now: Self.nowSeconds())?.csrfToken ?? "",
            flashMessage: Flash.message(FormQuery(request.uri)), errorMessage: error, page: page)
        return html(template, frame, status: status)
    }

    func html<Body: Sendable>(_ template: String, _ frame: PageFrame<Body>, status: HTTPResponse.Status = .ok) -> Response {
        guard let text = templates.render(frame, withTemplate: template) else {
            logger.error("console template missing", metadata: ["template": "\(template)"])
            return Response(status: .internalServerError)
        }
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// A page saying what went wrong, with a way back.
    func message(
        _ text: String, title: String, status: HTTPResponse.Status, request: Request, back: (String, String) = ("/", "Overview")
    ) -> Response {
        render("message", title: title, current: "", request: request,
               page: MessagePage(text: text, backLink: back.0, backLabel: back.1), status: status)
    }

    /// Runs a store operation for a page; a store that cannot answer is a 503 page.
    func page(_ request: Request, _ body: () async throws(StoreError) -> Response) async -> Response {
        do {
            return try await body()
        } catch {
            logger.error("console: store unavailable", metadata: ["error": "\(error)", "path": "\(request.uri.path.prefix(200))"])
            var response = message(
                "The store did not answer (\(error.message)). Try again in a moment.", title: "Store unavailable",
                status: .serviceUnavailable, request: request)
            response.headers[.retryAfter] = "5"
            return response
        }
    }

    /// 303 to `location` (after a form, so that reloading does not post it again).
    static func redirect(_ location: String) -> Response {
        var headers = HTTPFields()
        headers[.location] = location
        return Response(status: .seeOther, headers: headers)
    }

    static func asset(_ text: String, contentType: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = contentType
        headers[.cacheControl] = "max-age=3600"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    static func nowMilliseconds() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
    static func nowSeconds() -> Int64 { nowMilliseconds() / 1000 }
    static func now() -> String { Timestamp.format(epochMilliseconds: nowMilliseconds()) }
}

/// The message page's values.
struct MessagePage: Sendable {
    let text: String
    let backLink: String
    let backLabel: String
}

/// An order named by the page's path: `/orders/{provider}/{account}/{order_ref}`.
struct OrderKey: Sendable {
    let provider: String
    let account: String
    let orderRef: String

    init<Context: RequestContext>(_ context: Context) {
        func decoded(_ name: String) -> String {
            let raw = context.parameters.get(name) ?? ""
            return raw.removingPercentEncoding ?? raw
        }
        provider = decoded("provider")
        account = decoded("account")
        orderRef = decoded("order_ref")
    }

    var path: String { URLText.order(provider: provider, account: account, orderRef: orderRef) }
}

/// The message a page shows after a form sent it there (`?done=...`): chosen from a fixed
/// list, so a link cannot make the console say something else.
enum Flash {
    static func message(_ query: FormQuery) -> String? {
        let count = query["n"].flatMap { Int($0) }.map { max(0, $0) }
        switch query["done"] {
        case "expectation": return "Expectation registered."
        case "expectation-mismatch": return "Expectation registered; the order was already paid or authorized with another amount and is now flagged amount_mismatch."
        case "retried": return "\(count ?? 0) deliver\((count ?? 0) == 1 ? "y" : "ies") put back to pending for an immediate attempt."
        case "resumed": return "Target resumed; \(count ?? 0) pending deliver\((count ?? 0) == 1 ? "y is" : "ies are") due now."
        case "inquiry":
            // Only an outcome's own name is shown: the query string is the visitor's to write.
            let outcome = query["outcome"].flatMap { InquiryOutcome(rawValue: String($0)) }
            return "The provider was asked: \(outcome?.rawValue ?? "see the inquiries below")."
        default: return nil
        }
    }

    /// `path` with `?done=` (and `&n=`) added.
    static func path(_ path: String, done: String, count: Int? = nil) -> String {
        let separator = path.contains("?") ? "&" : "?"
        return path + separator + "done=" + done + (count.map { "&n=\($0)" } ?? "")
    }
}

/// The headers every console answer carries: nothing may load from elsewhere, nothing inline
/// runs, no page may frame the console, and pages holding payment data are not cached.
struct ConsoleHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    static var policy: String { "default-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'" }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[.contentSecurityPolicy] = Self.policy
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        response.headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        if response.headers[.cacheControl] == nil { response.headers[.cacheControl] = "no-store" }
        return response
    }
}
