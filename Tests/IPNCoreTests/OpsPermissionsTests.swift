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
import Testing

@Suite("Roles and the ops listener's permission table (issue 43)")
struct OpsPermissionsTests {
    @Test("roles are ordered viewer < operator < admin; each action needs the role of README's table")
    func roles() {
        #expect(OpsRole.viewer < .operator && OpsRole.operator < .admin)
        let viewer: Set<OpsAction> = [.consoleRead, .orderRead, .notificationRead, .eventRead, .deliveryRead, .inquiryRead, .signOut]
        let operatorOnly: Set<OpsAction> = [.rawRead, .expectationSet, .deliveryRetry, .deliveryResume, .deliveryPing, .reconcile, .reverify]
        for action in OpsAction.allCases {
            let expected: OpsRole = viewer.contains(action) ? .viewer : operatorOnly.contains(action) ? .operator : .admin
            #expect(action.role == expected, "\(action)")
        }
        #expect(OpsAction.auditRead.role == .admin)
    }

    @Test("a route that can show raw bodies asks notification.raw_read when raw is requested; HEAD is looked up as GET")
    func rawVariant() {
        let order = OpsPermissions.rule(method: "GET", path: "/api/v1/orders/{provider}/{order_ref}")
        #expect(order?.action(wantsRaw: false) == .orderRead)
        #expect(order?.action(wantsRaw: true) == .rawRead)
        #expect(OpsPermissions.rule(method: "HEAD", path: "/api/v1/orders") == .needs(.orderRead))
        #expect(OpsPermissions.rule(method: "GET", path: "/api/v1/events")?.action(wantsRaw: true) == .eventRead)
        #expect(OpsPermissions.rule(method: "GET", path: "/healthz")?.action(wantsRaw: false) == nil)
        #expect(OpsPermissions.rule(method: "DELETE", path: "/api/v1/orders") == nil)
    }

    @Test("the 403 text: forbidden: ACTION needs role ROLE; NAME is ROLE")
    func refusal() {
        let viewer = Principal(name: "vera@example.com", role: .viewer, via: .api)
        #expect(OpsPermissions.refusal(.expectationSet, for: viewer)
                == "forbidden: order.expectation_set needs role operator; vera@example.com is viewer")
        #expect(!viewer.may(.rawRead) && viewer.may(.orderRead))
        #expect(Principal.commandLine(login: "root").name == "cli:root")
    }
}
