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

import AsyncHTTPClient
import Foundation
import IPNCore
import NIOHTTP1
import Testing

/// Deliveries and ops API calls for the issue 4 tests.
extension TestDaemon {
    /// Delivers a notification built by the account's signer and expects the provider's ack.
    @discardableResult
    func deliver(_ provider: String, order: String, status: String, amount: Money = Money(minor: 1000, currency: "USD"),
                 uid: String = UUID().uuidString, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Answer {
        let answer = try await post(try simulated(provider, order: order, status: status, amount: amount, uid: uid))
        #expect(answer.status == 200, "\(provider) \(order): \(answer.text)", sourceLocation: sourceLocation)
        return answer
    }

    /// An Unlimint callback for account `shop2` (its own secret and route).
    func deliverShop2(order: String, status: String = "COMPLETED") async throws {
        let body = UnlimintRequests.body(order: order, id: UUID().uuidString, status: status)
        let answer = try await post("/ipn/unlimint/shop2", body: body, headers: UnlimintRequests.headers(for: body, secret: "shop2-secret"))
        #expect(answer.status == 200, "\(answer.text)")
    }

    func send(_ method: HTTPMethod, ops path: String, body: String, token: String? = TestDaemon.opsToken) async throws -> Answer {
        try await send(method, path, body: Array(body.utf8),
                       headers: token.map { [("Authorization", "Bearer \($0)")] } ?? [], port: ports.ops)
    }

    /// `GET` on the ops API, expecting 200 and a JSON object.
    func apiObject(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> JSONDict {
        let answer = try await api(path)
        #expect(answer.status == 200, "\(path): \(answer.text)", sourceLocation: sourceLocation)
        #expect(answer.headers["Content-Type"].first?.hasPrefix("application/json") == true, sourceLocation: sourceLocation)
        return try parseJSONObject(answer.text, sourceLocation: sourceLocation)
    }

    /// Every item of a list endpoint, following `next_cursor`, and the pages' sizes.
    func allPages(_ path: String, limit: Int) async throws -> (items: [JSONDict], pageSizes: [Int]) {
        var items: [JSONDict] = []
        var sizes: [Int] = []
        var cursor: String?
        repeat {
            let separator = path.contains("?") ? "&" : "?"
            let query = "\(separator)limit=\(limit)" + (cursor.map { "&cursor=\($0)" } ?? "")
            let page = try await apiObject(path + query)
            #expect(page.keySet == ["items", "next_cursor"])
            let pageItems = page.objects("items")
            items += pageItems
            sizes.append(pageItems.count)
            cursor = page.string("next_cursor")
            if cursor == nil { #expect(page.isNull("next_cursor")) }
        } while cursor != nil && sizes.count < 100
        return (items, sizes)
    }
}
