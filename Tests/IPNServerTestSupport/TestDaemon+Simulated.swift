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

extension TestDaemon {
    /// A notification built by the account's own signer (`ipnd simulate` uses the same).
    func simulated(_ provider: String, order: String, status: String, amount: Money, uid: String) throws -> RawRequest {
        let account = try #require(config.account(provider: provider, name: "default"))
        return try account.provider.simulatedRequest(SimulationSpec(
            orderRef: order, status: status, amount: amount, path: "/ipn/\(provider)", uniqueID: uid,
            time: "2026-11-21T04:01:02Z"))
    }

    func post(_ request: RawRequest) async throws -> Answer {
        try await post(request.target, body: request.body, headers: request.headers.map { ($0.name, $0.value) })
    }
}
