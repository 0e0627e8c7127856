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
import IPNCore
import IPNStore
import Logging
import NIOCore

extension OpsConsole {
    /// `GET /sign-in`: the token form, bound to a fresh sign-in cookie.
    /// - Parameter next: where to go once signed in (a refused attempt keeps the form's); by
    ///   default the `next` query parameter's.
    func signInPage(_ request: Request, next: String? = nil, error: String? = nil, status: HTTPResponse.Status = .ok) -> Response {
        let next = (next ?? FormQuery(request.uri)["next"]).flatMap { URLText.isLocalPath($0) ? $0 : nil } ?? "/"
        let form = sessions.signInForm()
        let frame = PageFrame(
            pageTitle: "Sign in", signedIn: false, navItems: [], csrfToken: "", flashMessage: nil, errorMessage: error,
            page: SignInPage(signInToken: form.token, nextPath: next))
        var response = html("signIn", frame, status: status)
        response.setCookie(form.cookie)
        return response
    }

    /// `POST /sign-in`: a token accepted opens a session; a refused one is logged and answered
    /// slowly (`SignInThrottle`), as is the next attempt from the same address.
    func signIn<Context: ConsoleRequestContext>(_ request: Request, context: Context) async -> Response {
        let peer = context.peerAddress?.description ?? "unknown"
        let wait = throttle.wait(for: peer, now: nowMilliseconds())
        if wait > .zero { try? await clock.sleep(for: wait) }
        guard let form = await ConsoleForm.read(request) else {
            return signInPage(request, error: "The form could not be read; try again.", status: .badRequest)
        }
        let next = form["next"].flatMap { URLText.isLocalPath($0) ? $0 : nil } ?? "/"
        guard sessions.checksSignIn(token: form["csrf"] ?? "", request) else {
            logger.warning("console sign-in refused: the form's CSRF token does not match", metadata: ["peer": "\(peer)"])
            return signInPage(
                request, next: next, error: "The sign-in form had expired or came from elsewhere; it has been renewed, try again.",
                status: .forbidden)
        }
        guard let token = form["token"], !token.isEmpty, let (user, digest) = credentials.holder(token: token) else {
            let (failures, delayMilliseconds) = throttle.failed(peer, now: nowMilliseconds())
            // Never the token itself: it may be a real one typed into the wrong field.
            logger.warning("console sign-in refused: token not accepted", metadata: [
                "peer": "\(peer)", "failures": "\(failures)", "delay_ms": "\(delayMilliseconds)",
            ])
            var detail = AuditDetail()
            detail.add("reason", "token not accepted")
            await auditQuietly(AuditEntry(
                actor: "unknown", role: nil, via: .console, action: .signIn, outcome: .refused, clientIP: clientIP(context),
                detail: detail))
            try? await clock.sleep(for: .milliseconds(delayMilliseconds))
            return signInPage(request, next: next, error: "That token is not accepted.", status: .unauthorized)
        }
        throttle.succeeded(peer)
        let principal = Principal(name: user.name, role: user.role, via: .console)
        do {
            try await store.appendAudit(AuditEntry(principal, clientIP: clientIP(context), action: .signIn))
        } catch {
            logger.error("console sign-in refused: the audit record could not be written", metadata: ["error": "\(error)"])
            return signInPage(request, next: next, error: "The sign-in could not be recorded (the store is unavailable); try again.",
                              status: .serviceUnavailable)
        }
        let (_, cookie) = sessions.start(user: user, digest: digest, now: nowSeconds())
        logger.info("console sign-in", metadata: ["peer": "\(peer)", "user": "\(user.name)", "role": "\(user.role)"])
        var response = Self.redirect(next)
        response.setCookie(cookie)
        response.setCookie(sessions.clearedSignInCookie())
        return response
    }

    /// `POST /sign-out` (the session middleware has checked its CSRF token).
    func signOut(_ request: Request) async -> Response {
        var response = Self.redirect("/sign-in")
        if let session = sessions.session(request, now: nowSeconds()) {
            if let identity = OpsIdentity.current { await auditQuietly(identity.audit(.signOut)) }
            response.setCookie(sessions.end(session, now: nowSeconds()))
        }
        return response
    }

    /// The client's address as the ops listener believes it.
    func clientIP<Context: ConsoleRequestContext>(_ context: Context) -> String? {
        OpsIdentity.current?.clientIP ?? context.peerAddress?.description
    }

    /// Writes a record whose failure must not change the answer (a refusal, a sign-out): the
    /// failure is logged.
    func auditQuietly(_ entry: AuditEntry) async {
        do {
            try await store.appendAudit(entry)
        } catch {
            logger.error("audit record not written", metadata: ["action": "\(entry.action.rawValue)", "error": "\(error)"])
        }
    }

    // MARK: For the ops listener's access check

    /// The principal of `request`'s console session and its CSRF token, when it has a valid one.
    public func sessionIdentity(_ request: Request) -> (principal: Principal, csrfToken: String)? {
        guard let session = sessions.session(request, now: nowSeconds()) else { return nil }
        return (Principal(name: session.user.name, role: session.user.role, via: .console), session.csrfToken)
    }

    /// The CSRF token the forms of `name`, a person named by a trusted proxy, carry.
    public func proxyCSRFToken(name: String) -> String {
        sessions.proxyCSRFToken(name: name)
    }

    /// The answer to a console request with no identity: a page is sent to the sign-in form
    /// (and back afterwards), anything else refused.
    public func signInRequired(_ request: Request) -> Response {
        if request.method == .get || request.method == .head {
            let target = request.uri.path + (request.uri.query.map { "?" + $0 } ?? "")
            return Self.redirect(URLText.link("/sign-in", [("next", URLText.isLocalPath(target) ? target : "/")]))
        }
        return ConsoleRefusal.page(
            "Your session has ended: sign in again, then repeat what you were doing.", status: .unauthorized)
    }

    /// The 403 page of a request `principal`'s role may not make (the caller records it).
    public func forbiddenPage(_ request: Request, action: OpsAction, principal: Principal) -> Response {
        ConsoleRefusal.page(
            "\(OpsPermissions.refusal(action, for: principal)). Ask an admin for the role if you need it.", status: .forbidden)
    }
}

/// The sign-in page's values.
struct SignInPage: Sendable {
    let signInToken: String
    let nextPath: String
}

/// Guards the console's pages behind the ops listener's access check (which has found who is
/// asking and whether their role may): a `POST` must carry the identity's CSRF token in its
/// `csrf` field, or it is refused (403) and recorded (`auth.forbidden`); its body is read here
/// (at most `ConsoleForm.maxBytes`) and stays readable for the handler.
struct ConsoleSessionMiddleware<Context: ConsoleRequestContext>: RouterMiddleware {
    let store: any Store
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var request = request
        guard let identity = OpsIdentity.current, let csrfToken = identity.csrfToken else {
            // The access check lets no request without an identity reach the pages.
            return ConsoleRefusal.page("Your session has ended: sign in again, then repeat what you were doing.", status: .unauthorized)
        }
        if request.method == .post {
            do {
                _ = try await request.collectBody(upTo: ConsoleForm.maxBytes)
            } catch {
                return ConsoleRefusal.page("The form is larger than \(ConsoleForm.maxBytes) bytes.", status: .contentTooLarge)
            }
            let form = await ConsoleForm.read(request)
            guard let token = form?["csrf"], Crypto.constantTimeEquals(Array(token.utf8), Array(csrfToken.utf8)) else {
                logger.warning("console form refused: missing or wrong CSRF token", metadata: [
                    "path": "\(request.uri.path.prefix(200))", "peer": "\(context.peerAddress?.description ?? "unknown")",
                    "user": "\(identity.principal.name)",
                ])
                var detail = AuditDetail()
                detail.add("reason", "missing or wrong CSRF token")
                detail.add("path", String(request.uri.path.prefix(200)))
                do {
                    try await store.appendAudit(identity.audit(.forbidden, outcome: .refused, detail: detail))
                } catch {
                    logger.error("audit record not written", metadata: ["action": "auth.forbidden", "error": "\(error)"])
                }
                return ConsoleRefusal.page("This form did not come from your console session (its CSRF token is missing or wrong). Reload the page and try again.", status: .forbidden)
            }
        }
        return try await next(request, context)
    }
}

/// A console form's fields (`application/x-www-form-urlencoded`).
struct ConsoleForm: Sendable {
    /// The most a console form may weigh.
    static let maxBytes = 16 * 1024

    let body: FormBody

    subscript(_ name: String) -> String? { (try? body.value(name)) ?? nil }

    /// The request's form; nil when it is too large or not a form.
    static func read(_ request: Request) async -> ConsoleForm? {
        var request = request
        guard let buffer = try? await request.collectBody(upTo: maxBytes),
              let body = try? FormBody.parse(Array(buffer: buffer))
        else { return nil }
        return ConsoleForm(body: body)
    }
}

/// The plain refusal pages (no layout: there may be no identity to render it with).
public enum ConsoleRefusal {
    /// A plain page (no session to render the layout with): the reason, and a way on.
    public static func page(_ text: String, status: HTTPResponse.Status) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        let body = """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">\
            <title>Refused · ipnd</title><link rel="icon" href="/favicon.svg" type="image/svg+xml"><link rel="stylesheet" href="/console.css"></head>\
            <body><main><h1>Refused</h1><p class="error" role="alert">\(HTMLText.escape(text))</p><p><a href="/">Back to the console</a></p></main></body></html>
            """
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }
}
