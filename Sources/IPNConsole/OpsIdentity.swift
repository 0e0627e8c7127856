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

import IPNCore
import IPNStore

/// Who is making the request being answered, as the ops listener's access check found them:
/// the principal, the client's address, and (console) the CSRF token their forms carry. Set
/// for the handler's task by the access check (`OpsIdentity.$current`), read by the handlers
/// that write audit records and by the console's pages, which show who is signed in and only
/// what their role may use.
public struct OpsIdentity: Sendable {
    public let principal: Principal
    /// The client: the TCP peer, or the address a trusted proxy forwarded.
    public let clientIP: String?
    /// The token every console form of this principal carries; nil on the API.
    public let csrfToken: String?
    /// Whether the person signed in through the console's form (and may sign out): false for
    /// one named by a trusted proxy.
    public let canSignOut: Bool

    public init(principal: Principal, clientIP: String?, csrfToken: String? = nil, canSignOut: Bool = false) {
        self.principal = principal
        self.clientIP = clientIP
        self.csrfToken = csrfToken
        self.canSignOut = canSignOut
    }

    @TaskLocal public static var current: OpsIdentity?

    /// An audit record of `action` by this principal from this address.
    public func audit(
        _ action: AuditAction, target: String? = nil, outcome: AuditOutcome = .ok, detail: AuditDetail = AuditDetail()
    ) -> AuditEntry {
        AuditEntry(principal, clientIP: clientIP, action: action, target: target, outcome: outcome, detail: detail)
    }
}
