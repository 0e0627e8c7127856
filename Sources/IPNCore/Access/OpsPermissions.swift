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

/// What a request to the ops listener asks to do, by the name the 403 answer and the audit
/// trail give it, and the least role that may do it.
public enum OpsAction: String, Sendable, CaseIterable, CustomStringConvertible {
    case consoleRead = "console.read"
    case orderRead = "order.read"
    case notificationRead = "notification.read"
    case eventRead = "event.read"
    case deliveryRead = "delivery.read"
    case inquiryRead = "inquiry.read"
    case signOut = "console.sign_out"
    /// Raw bodies and stored headers (`include=raw`, the console's raw view).
    case rawRead = "notification.raw_read"
    case expectationSet = "order.expectation_set"
    case deliveryRetry = "delivery.retry"
    case deliveryResume = "delivery.resume"
    case deliveryPing = "delivery.ping"
    case reconcile = "order.reconcile"
    case reverify = "notification.reverify"
    case auditRead = "audit.read"

    /// The least role that may do it (README's roles table).
    public var role: OpsRole {
        switch self {
        case .consoleRead, .orderRead, .notificationRead, .eventRead, .deliveryRead, .inquiryRead, .signOut: .viewer
        case .rawRead, .expectationSet, .deliveryRetry, .deliveryResume, .deliveryPing, .reconcile, .reverify: .operator
        case .auditRead: .admin
        }
    }

    public var description: String { rawValue }
}

/// The rule of one route of the ops listener.
public enum OpsRule: Sendable, Equatable {
    /// Anyone may: health, metrics (the listener is private), the console's stylesheet, icon
    /// and sign-in form.
    case open
    /// Needs a principal whose role may do `action`; with `raw`, a request for raw bodies and
    /// stored headers (`include=raw`, `raw=1`) is `OpsAction.rawRead` instead.
    case needs(OpsAction, raw: Bool = false)

    /// What a request under this rule asks to do; nil for an open route.
    public func action(wantsRaw: Bool) -> OpsAction? {
        switch self {
        case .open: nil
        case .needs(let action, let raw): raw && wantsRaw ? .rawRead : action
        }
    }
}

/// The permission table of the ops listener: every route the ops router registers, by method
/// and path pattern as the router writes them (`/api/v1/orders/{provider}/{order_ref}`), with
/// the rule that decides who may use it. Pure data: a route the router has and this table
/// lacks is refused (and fails a test), never open by default.
public enum OpsPermissions {
    /// A route: its method (`HEAD` is looked up as `GET`) and its path pattern.
    public struct Route: Hashable, Sendable, CustomStringConvertible {
        public let method: String
        public let path: String

        public init(_ method: String, _ path: String) {
            self.method = method == "HEAD" ? "GET" : method
            self.path = path
        }

        public var description: String { "\(method) \(path)" }
    }

    public static let table: [Route: OpsRule] = [
        // Health and metrics: no identity (the ops listener is never public).
        Route("GET", "/healthz"): .open,
        Route("GET", "/readyz"): .open,
        Route("GET", "/metrics"): .open,
        // The ops API.
        Route("GET", "/api/v1/orders"): .needs(.orderRead),
        Route("GET", "/api/v1/orders/{provider}/{order_ref}"): .needs(.orderRead, raw: true),
        Route("PUT", "/api/v1/orders/{provider}/{order_ref}/expectation"): .needs(.expectationSet),
        Route("POST", "/api/v1/orders/{provider}/{order_ref}/inquiries"): .needs(.reconcile),
        Route("GET", "/api/v1/notifications"): .needs(.notificationRead, raw: true),
        Route("POST", "/api/v1/notifications/reverify"): .needs(.reverify),
        Route("GET", "/api/v1/events"): .needs(.eventRead),
        Route("GET", "/api/v1/deliveries"): .needs(.deliveryRead),
        Route("POST", "/api/v1/deliveries/retry"): .needs(.deliveryRetry),
        Route("GET", "/api/v1/inquiries"): .needs(.inquiryRead),
        Route("GET", "/api/v1/audit"): .needs(.auditRead),
        // The console.
        Route("GET", "/console.css"): .open,
        Route("GET", "/favicon.svg"): .open,
        Route("GET", "/sign-in"): .open,
        Route("POST", "/sign-in"): .open,
        Route("POST", "/sign-out"): .needs(.signOut),
        Route("GET", "/"): .needs(.consoleRead),
        Route("GET", "/orders"): .needs(.orderRead),
        Route("GET", "/orders/{provider}/{account}/{order_ref}"): .needs(.orderRead, raw: true),
        Route("POST", "/orders/{provider}/{account}/{order_ref}/expectation"): .needs(.expectationSet),
        Route("POST", "/orders/{provider}/{account}/{order_ref}/inquiries"): .needs(.reconcile),
        Route("GET", "/notifications"): .needs(.notificationRead),
        Route("GET", "/notifications/{id}"): .needs(.notificationRead, raw: true),
        Route("GET", "/deliveries"): .needs(.deliveryRead),
        Route("POST", "/deliveries/retry"): .needs(.deliveryRetry),
        Route("POST", "/deliveries/resume"): .needs(.deliveryResume),
        Route("GET", "/audit"): .needs(.auditRead),
    ]

    /// The rule of `method` on the route `path` (the router's pattern); nil when the table has
    /// none, which the ops listener refuses.
    public static func rule(method: String, path: String) -> OpsRule? {
        table[Route(method, path)]
    }

    /// The 403 answer's text: `forbidden: ACTION needs role ROLE; NAME is ROLE`.
    public static func refusal(_ action: OpsAction, for principal: Principal) -> String {
        "forbidden: \(action) needs role \(action.role); \(principal.name) is \(principal.role)"
    }
}
