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

import Hummingbird
import IPNConsole
import IPNCore
import IPNStore
import Logging
import NIOCore

/// The provider-facing and ops routers.
enum Routes {
    static func providerRouter(endpoint: ProviderEndpoint, health: HealthEndpoints) -> Router<IPNRequestContext> {
        let router = Router(context: IPNRequestContext.self)
        router.add(middleware: NotFoundMiddleware(json: false))
        router.add(middleware: MethodNotAllowedMiddleware(json: false, rules: [
            // Only for accounts that exist: a route to nothing is 404 whatever the method.
            .init(allowed: [.post], exists: { endpoint.servesAccount(atPath: $0) }) { $0.hasPrefix("/ipn/") },
            .init(allowed: [.get, .head]) { $0 == "/healthz" || $0 == "/readyz" },
        ]))
        router.post("/ipn/:provider") { request, context in
            await endpoint.handle(
                request, context: context, providerName: context.parameters.get("provider") ?? "", accountName: "default")
        }
        router.post("/ipn/:provider/:account") { request, context in
            await endpoint.handle(
                request, context: context, providerName: context.parameters.get("provider") ?? "",
                accountName: context.parameters.get("account") ?? "")
        }
        health.register(on: router)
        return router
    }

    /// Health, `/metrics` (no token: the ops listener is private), the ops API (bearer token)
    /// and the console's pages (its own sign-in session, with the same tokens).
    static func opsRouter(
        api: OpsAPI, health: HealthEndpoints, metrics: MetricsEndpoint, console: OpsConsole, credentials: OpsCredentials,
        logger: Logger
    ) -> Router<IPNRequestContext> {
        let router = Router(context: IPNRequestContext.self)
        router.add(middleware: NotFoundMiddleware(json: true))
        router.add(middleware: BearerAuthMiddleware(credentials: credentials, logger: logger))
        router.add(middleware: MethodNotAllowedMiddleware(json: true, rules: [
            .init(allowed: [.get, .head]) {
                ["/healthz", "/readyz", "/metrics", "/api/v1/orders", "/api/v1/notifications", "/api/v1/events",
                 "/api/v1/deliveries", "/api/v1/inquiries"].contains($0)
            },
            .init(allowed: [.post]) { ["/api/v1/deliveries/retry", "/api/v1/notifications/reverify"].contains($0) },
            // /api/v1/orders/{provider}/{order_ref}[/expectation|/inquiries]
            .init(allowed: [.put]) { $0.hasPrefix("/api/v1/orders/") && $0.hasSuffix("/expectation") },
            .init(allowed: [.post]) { $0.hasPrefix("/api/v1/orders/") && $0.hasSuffix("/inquiries") },
            .init(allowed: [.get, .head]) { $0.hasPrefix("/api/v1/orders/") },
        ]))
        health.register(on: router)
        metrics.register(on: router)
        api.register(on: router)
        console.register(on: router)
        return router
    }
}

/// The console reads the client's address from the ops listener's context.
extension IPNRequestContext: ConsoleRequestContext {}

/// `GET /metrics`: Prometheus text format.
struct MetricsEndpoint: Sendable {
    let registry: MetricsRegistry
    let store: any StoreReading
    /// The accounts reconciliation asks about now.
    var inquiryScopes: @Sendable () -> [Scope] = { [] }

    func register(on router: Router<IPNRequestContext>) {
        router.getAndHead("/metrics") { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers,
                            body: ResponseBody(byteBuffer: ByteBuffer(string: await registry.scrape(store: store, inquiryScopes: inquiryScopes()))))
        }
    }
}

/// `GET /healthz` (process alive) and `GET /readyz` (store accepts a durable write).
struct HealthEndpoints: Sendable {
    let store: any Store
    let logger: Logger

    func register(on router: Router<IPNRequestContext>) {
        router.getAndHead("/healthz") { _, _ in Response.plain(200, "ok\n") }
        router.getAndHead("/readyz") { _, _ in await readiness() }
    }

    func readiness() async -> Response {
        do {
            try await store.heartbeat()
            return .plain(200, "ready\n")
        } catch {
            logger.warning("not ready: store does not accept writes", metadata: ["error": "\(error)"])
            return .plain(503, "store not writable\n")
        }
    }
}

/// Answers 405 with `Allow` for methods a path does not take (the router alone would say 404).
/// The first rule whose path test matches decides.
struct MethodNotAllowedMiddleware: RouterMiddleware {
    typealias Context = IPNRequestContext

    struct Rule: Sendable {
        let allowed: [HTTPRequest.Method]
        /// Whether the path names something that exists, asked only for a method not allowed
        /// (a request with an allowed method pays nothing for it).
        let exists: (@Sendable (String) -> Bool)?
        let matches: @Sendable (String) -> Bool

        init(
            allowed: [HTTPRequest.Method],
            exists: (@Sendable (String) -> Bool)? = nil,
            matches: @escaping @Sendable (String) -> Bool
        ) {
            self.allowed = allowed
            self.exists = exists
            self.matches = matches
        }
    }

    /// JSON bodies, as on the ops listener.
    let json: Bool
    let rules: [Rule]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = RoutedPath.of(request.uri.path)
        guard let rule = rules.first(where: { $0.matches(path) }), !rule.allowed.contains(request.method),
              rule.exists?(path) ?? true else {
            return try await next(request, context)
        }
        var response = json ? Response.json(405, RecordJSON.error("method not allowed")) : .plain(405, "method not allowed\n")
        response.headers[.allow] = rule.allowed.map(\.rawValue).joined(separator: ", ")
        return response.closingIfBodyUnread(request, context: context)
    }
}

/// A path no route takes: 404 with a short body (JSON on the ops listener) instead of an empty one.
struct NotFoundMiddleware: RouterMiddleware {
    typealias Context = IPNRequestContext
    let json: Bool

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            let response: Response = json
                ? .json(404, RecordJSON.error("no such route: \(request.uri.path.prefix(200))")) : .plain(404, "not found\n")
            return response.closingIfBodyUnread(request, context: context)
        }
    }
}

extension Response {
    /// This answer with `Connection: close`, the connection closed once the answer is handed
    /// to it. Hummingbird would otherwise read on to the next request, draining whatever body
    /// the client still sends: without end after a 413, megabytes after a 404.
    func closingConnection(_ channel: any Channel) -> Response {
        var response = self
        response.headers[.connection] = "close"
        let answer = body
        response.body = ResponseBody(contentLength: answer.contentLength) { writer in
            try await answer.write(writer)
            // After the answer's body. The connection closes once the client stops sending (or
            // after a bound), so that it is not reset while the client sends and the client reads
            // the answer. The handler takes this event before or after the answer's last part.
            let lingering = channel.eventLoop.makePromise(of: Void.self)
            channel.triggerUserOutboundEvent(LingeringClose(), promise: lingering)
            lingering.futureResult.whenFailure { _ in channel.close(promise: nil) }
        }
        return response
    }

    /// `closingConnection` when `request` came with a body nobody read; otherwise the
    /// connection stays for the next request.
    func closingIfBodyUnread(_ request: Request, context: IPNRequestContext) -> Response {
        let hasBody = request.headers[.transferEncoding] != nil || (request.headers[.contentLength].map { $0 != "0" } ?? false)
        return hasBody ? closingConnection(context.channel) : self
    }
}

extension Router where Context == IPNRequestContext {
    /// `GET path`, and `HEAD path` answering the same status and headers without the body.
    func getAndHead(_ path: RouterPath, use handler: @escaping @Sendable (Request, Context) async throws -> Response) {
        get(path, use: handler)
        head(path) { request, context in
            var response = try await handler(request, context)
            response.body = ResponseBody()
            return response
        }
    }
}

/// A request path as the router matches it: Hummingbird's router takes the segments and skips
/// empty ones, so `//ipn//unlimint/` reaches the same route as `/ipn/unlimint`. Checks made
/// before routing must see the path the same way.
enum RoutedPath {
    /// `path` without empty segments; `path` itself, with no allocation, when it has none.
    static func of(_ path: String) -> String {
        var previousWasSlash = false
        var hasEmptySegment = false
        for byte in path.utf8 {
            let isSlash = byte == UInt8(ascii: "/")
            if isSlash && previousWasSlash {
                hasEmptySegment = true
                break
            }
            previousWasSlash = isSlash
        }
        guard hasEmptySegment || (previousWasSlash && path.utf8.count > 1) else { return path }
        return "/" + path.split(separator: "/").joined(separator: "/")
    }
}
