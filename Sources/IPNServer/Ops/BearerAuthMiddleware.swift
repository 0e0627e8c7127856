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
import IPNConsole
import IPNCore
import IPNStore
import Logging

/// Guards the ops API (`/api/...`): `Authorization: Bearer <token>` whose SHA-256 is one of
/// the accepted digests (`ops.tokens_sha256`, through `OpsCredentials`, which the console's
/// sign-in shares), compared in constant time against every digest. Anything else is 401 with
/// `WWW-Authenticate: Bearer`; with no digests configured, everyone gets 401. Other paths (the
/// console's pages, which check their own session; health and metrics) pass through.
struct BearerAuthMiddleware: RouterMiddleware {
    typealias Context = IPNRequestContext
    let credentials: OpsCredentials
    let logger: Logger

    init(credentials: OpsCredentials, logger: Logger) {
        self.credentials = credentials
        self.logger = logger
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard Self.isAPIPath(request.uri.path) else { return try await next(request, context) }
        guard accepts(request.headers[values: .authorization]) else {
            // Never the header itself: it may be a real token sent to the wrong place.
            logger.warning("ops API request refused: no valid bearer token", metadata: [
                "path": .string(String(request.uri.path.prefix(200))),
                "peer": .string(context.peerAddress?.description ?? "unknown"), "status": "401",
            ])
            var response = Response.json(401, RecordJSON.error("a valid bearer token is required"))
            response.headers[.wwwAuthenticate] = "Bearer"
            // As after a 404: the body of a request refused is not read on to its end.
            return response.closingIfBodyUnread(request, context: context)
        }
        return try await next(request, context)
    }

    /// Whether the router would take `path` to the ops API. It matches path segments and skips
    /// empty ones, so `//api/v1/orders` reaches the same handler as `/api/v1/orders`: the check
    /// must see the path as the router does, not as its first bytes read.
    static func isAPIPath(_ path: String) -> Bool {
        let first = RoutedPath.of(path).dropFirst().prefix { $0 != "/" }
        return first.lowercased() == "api"
    }

    /// Whether exactly one `Authorization` field carries an accepted bearer token.
    func accepts(_ fields: [String]) -> Bool {
        guard fields.count == 1, let token = Self.bearerToken(fields[0]) else { return false }
        return credentials.accepts(token: token)
    }

    /// The token of `Bearer <token>` (scheme case-insensitive, RFC 6750); nil otherwise.
    static func bearerToken(_ value: String) -> String? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard let space = trimmed.firstIndex(where: { $0 == " " || $0 == "\t" }) else { return nil }
        guard trimmed[..<space].lowercased() == "bearer" else { return nil }
        let token = trimmed[space...].drop { $0 == " " || $0 == "\t" }
        guard !token.isEmpty else { return nil }
        return String(token)
    }
}
