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
import IPNStore
import Logging
import NIOCore

/// `GET /api/v1/deliveries?target=&state=&since=&limit=&cursor=` (newest first, paged like the
/// other lists) and `POST /api/v1/deliveries/retry` with `{"ids": [...]}` or
/// `{"target": "NAME", "state": "failed", "since": "..."}`, answering `{"retried": N}`.
struct DeliveriesAPI: Sendable {
    let store: any Store
    let logger: Logger

    static let maxBodyBytes = 65536

    func register(on router: Router<IPNRequestContext>) {
        router.getAndHead("/api/v1/deliveries") { request, _ in await list(request) }
        router.post("/api/v1/deliveries/retry") { request, context in await retry(request, context: context) }
    }

    func list(_ request: Request) async -> Response {
        let query = request.uri.queryParameters
        var filter = DeliveryFilter()
        do throws(QueryParameterError) {
            filter.target = try query.nonEmpty("target").map(QueryParameters.targetName)
            filter.state = try query.nonEmpty("state").map(QueryParameters.deliveryState)
            filter.since = try query.nonEmpty("since").map(QueryParameters.since)
            filter.limit = try query.nonEmpty("limit").map { text throws(QueryParameterError) in
                try QueryParameters.limit(text, max: QueryParameters.maxAPILimit)
            } ?? QueryParameters.defaultLimit
            filter.beforeID = try query.nonEmpty("cursor").map { text throws(QueryParameterError) in
                try ListCursor.decode(text, list: .deliveries)
            }
        } catch {
            return .json(400, RecordJSON.error(error.message))
        }
        let pageSize = filter.limit
        filter.limit = pageSize + 1
        let chosen = filter
        return await answer {
            let deliveries = try await store.deliveries(chosen)
            let page = ListCursor.page(deliveries, size: pageSize, list: .deliveries) { $0.id }
            return .json(200, RecordJSON.page(page.rows.map(RecordJSON.delivery), nextCursor: page.next))
        }
    }

    func retry(_ request: Request, context: IPNRequestContext) async -> Response {
        let tooLarge = Response.json(413, RecordJSON.error("the body is larger than \(Self.maxBodyBytes) bytes"))
            .closingConnection(context.channel)
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: Self.maxBodyBytes)
        } catch {
            return tooLarge
        }
        let selection: DeliveryRetrySelection
        do {
            selection = try Self.selection(Array(buffer: body))
        } catch {
            return .json(400, RecordJSON.error(error.message))
        }
        let now = Timestamp.format(epochMilliseconds: Int64(Date().timeIntervalSince1970 * 1000))
        return await answer {
            let count = try await store.retryDeliveries(selection, now: now)
            logger.info("deliveries put back to pending", metadata: ["count": "\(count)", "via": "ops_api"])
            return .json(200, .object([("retried", .int(Int64(count)))]))
        }
    }

    /// `{"ids": [1, 2]}` or `{"target": "NAME", "state": "failed", "since": "..."}`.
    static func selection(_ bytes: [UInt8]) throws(QueryParameterError) -> DeliveryRetrySelection {
        let object: JSONObject
        do {
            object = try JSONParser.parseObject(bytes)
        } catch {
            throw QueryParameterError("the body is not a JSON object: \(error)")
        }
        let known: Set<String> = ["ids", "target", "state", "since"]
        if let unknown = object.members.first(where: { !known.contains($0.key) }) {
            throw QueryParameterError("unknown member \"\(unknown.key.prefix(64))\"; the body takes ids, or target, state and since")
        }
        if let ids = object["ids"] {
            guard object["target"] == nil, object["state"] == nil, object["since"] == nil else {
                throw QueryParameterError("give either ids, or target and state, not both")
            }
            guard case .array(let items, _) = ids, !items.isEmpty, items.count <= 10_000 else {
                throw QueryParameterError("ids must be a non-empty array of delivery ids (at most 10000)")
            }
            var parsed: [Int64] = []
            for item in items {
                guard let text = item.scalarText, let id = Int64(text), id > 0 else {
                    throw QueryParameterError("ids must be positive whole numbers")
                }
                parsed.append(id)
            }
            return .ids(parsed)
        }
        guard let target = object.string("target"), let stateText = object.string("state") else {
            throw QueryParameterError("give ids, or target and state (failed)")
        }
        let name = try QueryParameters.targetName(target)
        let state = try QueryParameters.deliveryState(stateText)
        guard state == .failed || state == .pending else { throw QueryParameterError("state must be failed or pending") }
        let since = try object.string("since").map(QueryParameters.since)
        return .target(name, state: state, since: since)
    }

    private func answer(_ body: () async throws -> Response) async -> Response {
        await Response.storeOperation(logger: logger, body)
    }
}
