import Hummingbird
import IPNCore
import IPNStore
import Logging

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
