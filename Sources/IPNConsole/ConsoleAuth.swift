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
        let wait = throttle.wait(for: peer, now: Self.nowMilliseconds())
        if wait > .zero { try? await Task.sleep(for: wait) }
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
        guard let token = form["token"], !token.isEmpty, let digest = credentials.acceptedDigest(token: token) else {
            let (failures, delayMilliseconds) = throttle.failed(peer, now: Self.nowMilliseconds())
            // Never the token itself: it may be a real one typed into the wrong field.
            logger.warning("console sign-in refused: token not accepted", metadata: [
                "peer": "\(peer)", "failures": "\(failures)", "delay_ms": "\(delayMilliseconds)",
            ])
            try? await Task.sleep(for: .milliseconds(delayMilliseconds))
            return signInPage(request, next: next, error: "That token is not accepted.", status: .unauthorized)
        }
        throttle.succeeded(peer)
        let (_, cookie) = sessions.start(digest: digest, now: Self.nowSeconds())
        logger.info("console sign-in", metadata: ["peer": "\(peer)"])
        var response = Self.redirect(next)
        response.setCookie(cookie)
        response.setCookie(sessions.clearedSignInCookie())
        return response
    }

    /// `POST /sign-out` (the session middleware has checked its CSRF token).
    func signOut(_ request: Request) -> Response {
        var response = Self.redirect("/sign-in")
        if let session = sessions.session(request, now: Self.nowSeconds()) {
            response.setCookie(sessions.end(session, now: Self.nowSeconds()))
        }
        return response
    }
}

/// The sign-in page's values.
struct SignInPage: Sendable {
    let signInToken: String
    let nextPath: String
}

/// Lets only signed-in requests reach the console's pages: without a valid session a `GET`
/// goes to the sign-in page (and back afterwards), anything else is refused. A `POST` must
/// also carry the session's CSRF token in its `csrf` field; its body is read here (at most
/// `ConsoleForm.maxBytes`) and stays readable for the handler.
struct ConsoleSessionMiddleware<Context: ConsoleRequestContext>: RouterMiddleware {
    let sessions: ConsoleSessions
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var request = request
        guard let session = sessions.session(request, now: OpsConsole.nowSeconds()) else {
            if request.method == .get || request.method == .head {
                let target = request.uri.path + (request.uri.query.map { "?" + $0 } ?? "")
                return OpsConsole.redirect(URLText.link("/sign-in", [("next", URLText.isLocalPath(target) ? target : "/")]))
            }
            return refused("Your session has ended: sign in again, then repeat what you were doing.", status: .unauthorized)
        }
        if request.method == .post {
            do {
                _ = try await request.collectBody(upTo: ConsoleForm.maxBytes)
            } catch {
                return refused("The form is larger than \(ConsoleForm.maxBytes) bytes.", status: .contentTooLarge)
            }
            let form = await ConsoleForm.read(request)
            guard let token = form?["csrf"], sessions.checks(csrf: token, for: session) else {
                logger.warning("console form refused: missing or wrong CSRF token", metadata: [
                    "path": "\(request.uri.path.prefix(200))", "peer": "\(context.peerAddress?.description ?? "unknown")",
                ])
                return refused("This form did not come from your console session (its CSRF token is missing or wrong). Reload the page and try again.", status: .forbidden)
            }
        }
        return try await next(request, context)
    }

    /// A plain page (no session to render the layout with): the reason, and a way on.
    private func refused(_ text: String, status: HTTPResponse.Status) -> Response {
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
