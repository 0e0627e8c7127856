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
import Hummingbird
import IPNCore

/// Console sessions: a cookie signed with a key made when the daemon starts (so a restart
/// signs everyone out), naming the ops token it was opened with by a keyed hash of its digest.
/// A session ends after 12 hours, at sign-out, or once its token is no longer accepted.
///
/// Nothing is kept per session but the ids of sessions signed out before they expired.
final class ConsoleSessions: Sendable {
    static let cookieName = "ipnd_session"
    /// The short-lived cookie the sign-in form's CSRF token is bound to.
    static let signInCookieName = "ipnd_signin"
    static let lifetimeSeconds: Int64 = 12 * 3600
    static let signInFormSeconds: Int64 = 3600

    /// One signed-in session.
    struct Session: Sendable, Equatable {
        let id: String
        /// Unix seconds.
        let expires: Int64
        /// What every form of this session carries in its `csrf` field.
        let csrfToken: String
    }

    private let key: [UInt8]
    private let credentials: OpsCredentials
    /// `Secure` on the cookies (behind an https proxy).
    let secureCookie: Bool
    /// Signed-out session ids, until they would have expired.
    private let signedOut = Locked<[String: Int64]>([:])

    init(credentials: OpsCredentials, secureCookie: Bool) {
        var generator = SystemRandomNumberGenerator()
        key = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        self.credentials = credentials
        self.secureCookie = secureCookie
    }

    // MARK: Sessions

    /// A new session for the accepted token `digest`, and the cookie that carries it.
    func start(digest: [UInt8], now: Int64) -> (Session, Cookie) {
        let id = Base64URLText.encode(Self.randomBytes(18))
        let expires = now + Self.lifetimeSeconds
        let payload = "\(expires).\(id).\(tokenTag(digest))"
        let value = payload + "." + Base64URLText.encode(mac("session", payload))
        let session = Session(id: id, expires: expires, csrfToken: csrfToken(sessionID: id))
        return (session, cookie(Self.cookieName, value, maxAge: Int(Self.lifetimeSeconds)))
    }

    /// The session `request`'s cookie carries, when it is genuine, unexpired, not signed out
    /// and opened with a token still accepted.
    func session(_ request: Request, now: Int64) -> Session? {
        guard let value = request.cookies[Self.cookieName]?.value else { return nil }
        let parts = value.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, let expires = Int64(parts[0]), now < expires,
              let tag = Base64URLText.decode(String(parts[2])),
              let signature = Base64URLText.decode(String(parts[3]))
        else { return nil }
        let payload = parts[0...2].joined(separator: ".")
        guard Crypto.constantTimeEquals(signature, mac("session", payload)) else { return nil }
        let id = String(parts[1])
        let isSignedOut = signedOut.withLock { $0[id] != nil }
        guard !isSignedOut, credentials.acceptsAny(where: { Crypto.constantTimeEquals(tokenTagBytes($0), tag) }) else {
            return nil
        }
        return Session(id: id, expires: expires, csrfToken: csrfToken(sessionID: id))
    }

    /// Ends `session` (sign-out) and returns the cookie that clears it in the browser.
    func end(_ session: Session, now: Int64) -> Cookie {
        signedOut.withLock { ids in
            ids = ids.filter { $0.value > now }
            ids[session.id] = session.expires
        }
        return cookie(Self.cookieName, "", maxAge: 0)
    }

    /// Whether `token` is this session's CSRF token.
    func checks(csrf token: String, for session: Session) -> Bool {
        Crypto.constantTimeEquals(Array(token.utf8), Array(session.csrfToken.utf8))
    }

    // MARK: The sign-in form

    /// The sign-in form's CSRF token and the cookie it is bound to: the form's POST must carry
    /// both (a page of another site can send neither).
    func signInForm() -> (token: String, cookie: Cookie) {
        let nonce = Base64URLText.encode(Self.randomBytes(18))
        return (signInToken(nonce), cookie(Self.signInCookieName, nonce, maxAge: Int(Self.signInFormSeconds)))
    }

    /// Whether `token` is the sign-in form token of the nonce `request`'s cookie carries.
    func checksSignIn(token: String, _ request: Request) -> Bool {
        guard let nonce = request.cookies[Self.signInCookieName]?.value, !nonce.isEmpty else { return false }
        return Crypto.constantTimeEquals(Array(token.utf8), Array(signInToken(nonce).utf8))
    }

    /// Clears the sign-in form's cookie once it has served.
    func clearedSignInCookie() -> Cookie {
        cookie(Self.signInCookieName, "", maxAge: 0)
    }

    // MARK: Keyed hashes

    private func mac(_ purpose: String, _ text: String) -> [UInt8] {
        Crypto.hmac(.sha256, key: key, data: Array("\(purpose):\(text)".utf8))
    }

    private func tokenTagBytes(_ digest: [UInt8]) -> [UInt8] {
        Array(Crypto.hmac(.sha256, key: key, data: Array("token:".utf8) + digest).prefix(16))
    }

    private func tokenTag(_ digest: [UInt8]) -> String {
        Base64URLText.encode(tokenTagBytes(digest))
    }

    private func csrfToken(sessionID: String) -> String {
        Base64URLText.encode(mac("csrf", sessionID))
    }

    private func signInToken(_ nonce: String) -> String {
        Base64URLText.encode(mac("sign-in", nonce))
    }

    private func cookie(_ name: String, _ value: String, maxAge: Int) -> Cookie {
        Cookie(name: name, value: value, maxAge: maxAge, path: "/", secure: secureCookie, httpOnly: true, sameSite: .strict)
    }

    private static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }
}

/// base64url without padding: cookie-safe and form-safe.
enum Base64URLText {
    static func encode(_ bytes: [UInt8]) -> String {
        Base64.encode(bytes).replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ text: String) -> [UInt8]? {
        guard text.utf8.count <= 128 else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.utf8.count % 4) % 4)
        return Base64.decode(standard)
    }
}
