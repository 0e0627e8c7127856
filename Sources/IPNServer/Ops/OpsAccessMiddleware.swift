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
import IPNConfig
import IPNConsole
import IPNCore
import IPNStore
import Logging
import NIOCore

/// The ops listener's one access check, before any handler runs: who is asking (the person a
/// trusted proxy names, else a bearer token on the API or a console session on the pages), and
/// whether their role may do what the route (`OpsPermissions`) and its raw parameter ask.
///
/// - No identity: the API answers 401 with `WWW-Authenticate: Bearer` (recorded, at most 60 a
///   minute per client address); the console sends a page to its sign-in form.
/// - A role that may not: 403 `{"error":"forbidden: ACTION needs role ROLE; NAME is ROLE"}` on
///   the API, a 403 page in the console, recorded as `auth.forbidden`.
/// - A route the table lacks: refused (403), never open by default.
/// The identity goes with the request to its handler (`OpsIdentity.current`): the handlers
/// write their audit records with it, the pages show who is signed in.
struct OpsAccessMiddleware: RouterMiddleware {
    typealias Context = IPNRequestContext
    let credentials: OpsCredentials
    let console: OpsConsole
    let live: LiveConfig
    let store: any Store
    let metrics: AuditMetrics
    let logger: Logger
    /// API 401s recorded per client address and minute; the rest are counted, not recorded.
    let refusals = RejectedStoreBudget(perWindow: 60)

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let isAPI = Self.isAPIPath(request.uri.path)
        let proxy = live.current.ops.proxyAuth
        let client = ClientAddress.resolve(
            peer: context.peerAddress, forwardedFor: proxy == nil ? [] : request.headers[values: .xForwardedFor],
            trustedProxies: proxy?.trustedProxies ?? [])
        let clientIP = client?.description
        var identity: OpsIdentity?
        var personWithoutRole: String?
        if let proxy {
            switch ProxyIdentity.resolve(request.headers, peer: context.peerAddress, settings: proxy) {
            case .person(let name, let role?):
                identity = OpsIdentity(
                    principal: Principal(name: name, role: role, via: isAPI ? .api : .console), clientIP: clientIP,
                    csrfToken: isAPI ? nil : console.proxyCSRFToken(name: name), canSignOut: false)
            case .person(let name, nil):
                personWithoutRole = name
            case .untrustedHeaders:
                metrics.untrustedIdentityHeaders()
            case .none:
                break
            }
        }
        if identity == nil, personWithoutRole == nil {
            if isAPI {
                let fields = request.headers[values: .authorization]
                if fields.count == 1, let token = Self.bearerToken(fields[0]), let (user, _) = credentials.holder(token: token) {
                    identity = OpsIdentity(principal: Principal(name: user.name, role: user.role, via: .api), clientIP: clientIP)
                }
            } else if let (principal, csrf) = console.sessionIdentity(request) {
                identity = OpsIdentity(principal: principal, clientIP: clientIP, csrfToken: csrf, canSignOut: true)
            }
        }
        guard let route = context.endpointPath else {
            // No route takes it: 404 or 405 follow, but the API still says 401 first to a stranger.
            if isAPI, identity == nil, personWithoutRole == nil { return await unauthorized(request, context: context, client: client) }
            return try await OpsIdentity.$current.withValue(identity) { try await next(request, context) }
        }
        guard let rule = OpsPermissions.rule(method: request.method.rawValue, path: route) else {
            logger.error("ops route without a permission rule: refused", metadata: ["route": "\(request.method) \(route)"])
            let text = "forbidden: \(request.method) \(route) has no permission rule"
            return isAPI ? .json(403, RecordJSON.error(text)) : .plain(403, text + "\n")
        }
        guard let action = rule.action(wantsRaw: Self.wantsRaw(request, api: isAPI)) else {
            return try await OpsIdentity.$current.withValue(identity) { try await next(request, context) }
        }
        if let person = personWithoutRole {
            let text = "forbidden: \(action) needs role \(action.role); \(person) has no role"
            await recordForbidden(
                AuditEntry(actor: person, role: nil, via: isAPI ? .api : .console, action: .forbidden, clientIP: clientIP), action: action,
                request: request, role: "none")
            return isAPI ? .json(403, RecordJSON.error(text)) : ConsoleRefusal.page(text, status: .forbidden).withConsoleHeaders()
        }
        guard let identity else {
            if isAPI { return await unauthorized(request, context: context, client: client) }
            return console.signInRequired(request).withConsoleHeaders()
        }
        guard identity.principal.may(action) else {
            await recordForbidden(identity.audit(.forbidden), action: action, request: request, role: identity.principal.role.rawValue)
            return isAPI
                ? .json(403, RecordJSON.error(OpsPermissions.refusal(action, for: identity.principal))).closingIfBodyUnread(request, context: context)
                : console.forbiddenPage(request, action: action, principal: identity.principal).withConsoleHeaders()
        }
        return try await OpsIdentity.$current.withValue(identity) { try await next(request, context) }
    }

    /// 401 with `WWW-Authenticate: Bearer`, recorded (`auth.refused`) within the address's budget.
    private func unauthorized(_ request: Request, context: Context, client: IPAddress?) async -> Response {
        // Never the header itself: it may be a real token sent to the wrong place.
        logger.warning("ops API request refused: no valid bearer token", metadata: [
            "path": .string(String(request.uri.path.prefix(200))),
            "peer": .string(context.peerAddress?.description ?? "unknown"), "status": "401",
        ])
        if refusals.admit(client, at: console.clock.millis()).store {
            var detail = AuditDetail()
            detail.add("reason", request.headers[.authorization] == nil ? "no bearer token" : "bearer token not accepted")
            detail.add("path", String(request.uri.path.prefix(200)))
            let entry = AuditEntry(
                actor: "unknown", role: nil, via: .api, action: .refused, outcome: .refused, clientIP: client?.description, detail: detail)
            do {
                try await store.appendAudit(entry)
            } catch {
                logger.error("audit record not written", metadata: ["action": "auth.refused", "error": "\(error)"])
            }
        } else {
            metrics.dropped()
        }
        var response = Response.json(401, RecordJSON.error("a valid bearer token is required"))
        response.headers[.wwwAuthenticate] = "Bearer"
        // As after a 404: the body of a request refused is not read on to its end.
        return response.closingIfBodyUnread(request, context: context)
    }

    /// Records a refusal (`auth.forbidden`): the action asked and the role it needs. A record
    /// that cannot be written changes nothing of the answer, which refuses anyway.
    private func recordForbidden(_ entry: AuditEntry, action: OpsAction, request: Request, role: String) async {
        var entry = entry
        entry.target = String(request.uri.path.prefix(200))
        entry.outcome = .refused
        entry.detail.add("action", action.rawValue)
        entry.detail.add("needs", action.role.rawValue)
        metrics.forbidden(role: role)
        do {
            try await store.appendAudit(entry)
        } catch {
            logger.error("audit record not written", metadata: ["action": "auth.forbidden", "error": "\(error)"])
        }
    }

    /// Whether the request asks for raw bodies and stored headers: `include=raw` (one of a
    /// comma-separated list) on the API, `raw=1` in the console.
    static func wantsRaw(_ request: Request, api: Bool) -> Bool {
        let query = request.uri.queryParameters
        if api { return query[values: "include"].contains { $0.split(separator: ",").contains("raw") } }
        return query["raw"] == "1"
    }

    /// Whether the router would take `path` to the ops API. It matches path segments and skips
    /// empty ones, so `//api/v1/orders` reaches the same handler as `/api/v1/orders`: the check
    /// must see the path as the router does, not as its first bytes read.
    static func isAPIPath(_ path: String) -> Bool {
        let first = RoutedPath.of(path).dropFirst().prefix { $0 != "/" }
        return first.lowercased() == "api"
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

/// The person an authenticating proxy names, believed only from `trusted_proxies`.
enum ProxyIdentity: Equatable {
    /// A person named by a trusted proxy, with the role their groups (or `users`) give; nil: none.
    case person(String, OpsRole?)
    /// Identity headers from an address that is not a trusted proxy: ignored (and counted).
    case untrustedHeaders
    /// No identity headers, or an empty user header.
    case none

    /// The most a person's name may be (longer ones are not believed).
    static let maxNameBytes = 256

    static func resolve(_ headers: HTTPFields, peer: IPAddress?, settings: ProxyAuthSettings) -> ProxyIdentity {
        guard let userName = HTTPField.Name(settings.userHeader) else { return .none }
        let names = headers[values: userName]
        let groupsName = settings.groupsHeader.flatMap { HTTPField.Name($0) }
        let groups = groupsName.map { headers[values: $0] } ?? []
        guard let peer, settings.trustedProxies.containsAddress(peer) else {
            return names.isEmpty && groups.isEmpty ? .none : .untrustedHeaders
        }
        // One field, not empty, of visible characters: anything else names nobody.
        guard names.count == 1 else { return .none }
        let person = names[0].trimmingCharacters(in: .whitespaces)
        guard !person.isEmpty, person.utf8.count <= maxNameBytes,
              !person.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { return .none }
        return .person(person, settings.role(person: person, groupFields: groups))
    }
}
