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

/// What a person or an application may do on the ops listener: each role may do all that the
/// one before it may, and more (README, "Who may do what").
public enum OpsRole: String, Sendable, CaseIterable, Comparable, CustomStringConvertible {
    /// Reads orders, notifications, transitions, events, deliveries and inquiries; the console's pages.
    case viewer
    /// A viewer who may also read raw bodies and stored headers, and change things: register
    /// expectations, retry, resume and ping deliveries, ask a provider, reverify.
    case `operator`
    /// An operator who may also read the audit trail.
    case admin

    private var rank: Int {
        switch self {
        case .viewer: 0
        case .operator: 1
        case .admin: 2
        }
    }

    public static func < (lhs: OpsRole, rhs: OpsRole) -> Bool { lhs.rank < rhs.rank }

    public var description: String { rawValue }
}

/// Who is asking, however they proved it: an ops API bearer token, a console session, the
/// person an authenticating proxy names, a command run from a shell, or the daemon itself.
public struct Principal: Sendable, Equatable, CustomStringConvertible {
    /// How the principal reached ipnd: the audit trail's `via`.
    public enum Via: String, Sendable, CaseIterable {
        case api
        case console
        case cli
        case system
    }

    /// The user's name (`ops.users[].name`), `token:` and 12 hex digits of a digest listed in
    /// `ops.tokens_sha256`, the proxy's person, `cli:LOGIN`, or `system`.
    public let name: String
    public let role: OpsRole
    public let via: Via

    public init(name: String, role: OpsRole, via: Via) {
        self.name = name
        self.role = role
        self.via = via
    }

    /// The daemon itself: its start and stop and its config reloads.
    public static let system = Principal(name: "system", role: .admin, via: .system)

    /// A command run by `login` from a shell (the sudoing user's login under sudo): the store
    /// and the config are open to it, as to an admin.
    public static func commandLine(login: String) -> Principal {
        Principal(name: "cli:" + login, role: .admin, via: .cli)
    }

    /// Whether this principal may do `action`.
    public func may(_ action: OpsAction) -> Bool { role >= action.role }

    public var description: String { "\(name) (\(role))" }
}
