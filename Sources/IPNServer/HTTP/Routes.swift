import Hummingbird
import IPNCore
import IPNStore
import Logging
import NIOCore

/// The provider-facing and ops routers.
enum Routes {
    static func providerRouter(endpoint: ProviderEndpoint, health: HealthEndpoints) -> Router<IPNRequestContext> {
        let router = Router(context: IPNRequestContext.self)
        router.add(middleware: MethodNotAllowedMiddleware(pathPrefixes: ["/ipn/"], allowed: [.post]))
        router.add(middleware: MethodNotAllowedMiddleware(exactPaths: ["/healthz", "/readyz"], allowed: [.get, .head]))
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

    /// Health, `/metrics` (no token: the ops listener is private) and the ops API (bearer token).
    static func opsRouter(
        api: OpsAPI, health: HealthEndpoints, metrics: MetricsEndpoint, tokenDigests: [[UInt8]]
    ) -> Router<IPNRequestContext> {
        let router = Router(context: IPNRequestContext.self)
        router.add(middleware: BearerAuthMiddleware(tokenDigests: tokenDigests))
        router.add(middleware: MethodNotAllowedMiddleware(
            exactPaths: ["/healthz", "/readyz", "/metrics", "/api/v1/orders", "/api/v1/notifications"], allowed: [.get, .head]))
        health.register(on: router)
        metrics.register(on: router)
        api.register(on: router)
        return router
    }
}

/// `GET /metrics`: Prometheus text format.
struct MetricsEndpoint: Sendable {
    let registry: MetricsRegistry
    let store: Store

    func register(on router: Router<IPNRequestContext>) {
        router.get("/metrics") { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers,
                            body: ResponseBody(byteBuffer: ByteBuffer(string: await registry.scrape(store: store))))
        }
    }
}

/// `GET /healthz` (process alive) and `GET /readyz` (store accepts a durable write).
struct HealthEndpoints: Sendable {
    let inbox: Inbox
    let logger: Logger

    func register(on router: Router<IPNRequestContext>) {
        router.get("/healthz") { _, _ in Response.plain(200, "ok\n") }
        router.get("/readyz") { _, _ in await readiness() }
    }

    func readiness() async -> Response {
        do {
            try await inbox.heartbeat()
            return .plain(200, "ready\n")
        } catch {
            logger.warning("not ready: store does not accept writes", metadata: ["error": "\(error)"])
            return .plain(503, "store not writable\n")
        }
    }
}

/// Answers 405 with `Allow` for methods a path does not take (the router alone would say 404).
struct MethodNotAllowedMiddleware: RouterMiddleware {
    typealias Context = IPNRequestContext
    let pathPrefixes: [String]
    let exactPaths: [String]
    let allowed: [HTTPRequest.Method]

    init(pathPrefixes: [String] = [], exactPaths: [String] = [], allowed: [HTTPRequest.Method]) {
        self.pathPrefixes = pathPrefixes
        self.exactPaths = exactPaths
        self.allowed = allowed
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        let covered = exactPaths.contains(path) || pathPrefixes.contains { path.hasPrefix($0) }
        guard covered, !allowed.contains(request.method) else { return try await next(request, context) }
        var response = Response.plain(405, "method not allowed\n")
        response.headers[.allow] = allowed.map(\.rawValue).joined(separator: ", ")
        return response
    }
}
