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
import IPNConfig
import IPNCore
import IPNStore
import Logging
import NIOCore

/// `POST /api/v1/notifications/reverify` (product.md section 11) with the selection of
/// `ipnd notifications reverify` as a JSON object:
/// `{"ids": [17, 18], "provider": "unlimint", "account": "default", "reason": "bad_signature",
/// "since": "2026-11-26", "apply": false, "after": 0, "limit": 100}`, every member optional
/// (`apply` false: a dry run). One page of stored rejected requests, ascending by id, is
/// verified again per call; the answer is
/// `{"apply": false, "results": [...], "counts": {"applied": 20, ...}, "next_after": N}`, with
/// `next_after` (the `after` of the next page) null after the last page.
struct ReverifyAPI: Sendable {
    /// The config in force: requests are verified again with today's accounts, secrets and
    /// `allow_ips`, as a reload left them.
    let config: LiveConfig
    let store: any Store
    let logger: Logger

    static let maxBodyBytes = 256 * 1024

    func register(on router: Router<IPNRequestContext>) {
        router.post("/api/v1/notifications/reverify") { request, context in await reverify(request, context: context) }
    }

    func reverify(_ request: Request, context: IPNRequestContext) async -> Response {
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: Self.maxBodyBytes)
        } catch {
            return Response.json(413, RecordJSON.error("the body is larger than \(Self.maxBodyBytes) bytes"))
                .closingConnection(context.channel)
        }
        let asked: ReverifyRequest
        do {
            asked = try ReverifyRequest(Array(buffer: body))
        } catch {
            return .json(400, RecordJSON.error(error.message))
        }
        var run = Reverification(config: config.current, store: store, apply: asked.apply)
        do {
            let (results, next) = try await run.next(asked.selection)
            for result in results where result.recorded { logRecorded(result) }
            if asked.apply {
                logger.info("notifications reverified", metadata: [
                    "via": "ops_api", "examined": "\(results.count)",
                    "verdicts": .string(results.verdictCounts.map { "\($0.verdict)=\($0.count)" }.joined(separator: ",")),
                ])
            }
            return .json(200, .object([
                ("apply", .bool(asked.apply)),
                ("results", .array(results.map(\.json))),
                ("counts", .object(results.verdictCounts.map { ($0.verdict, JSONOut.int(Int64($0.count))) })),
                ("next_after", .optional(next?.afterID)),
            ]))
        } catch {
            logger.error("ops API: store unavailable", metadata: ["error": "\(error)"])
            var response = Response.json(503, RecordJSON.error("store unavailable, retry later"))
            response.headers[.retryAfter] = "5"
            return response
        }
    }

    /// A notification recorded from a rejected one: logged as the provider endpoint logs one.
    private func logRecorded(_ result: ReverifyResult) {
        var metadata: Logger.Metadata = [
            "provider": .string(result.provider), "account": .string(result.account),
            "order_ref": .string(result.orderRef ?? ""), "verdict": .string(result.verdict),
            "notification_id": .string(result.notificationID.map { String($0) } ?? ""),
            "reverified_from": .string(String(result.id)), "via": "ops_api",
        ]
        if let state = result.orderState { metadata["order_state"] = .string(state.rawValue) }
        if let detail = result.detail { metadata["detail"] = .string(detail) }
        logger.log(level: result.reason == nil ? .info : .warning, "notification reverified", metadata: metadata)
    }
}

/// The body of `POST /api/v1/notifications/reverify`.
struct ReverifyRequest {
    var selection: RejectedSelection
    var apply: Bool

    static let known: Set<String> = ["ids", "provider", "account", "reason", "since", "apply", "after", "limit"]

    init(_ bytes: [UInt8]) throws(QueryParameterError) {
        let object: JSONObject
        do {
            object = bytes.isEmpty ? try JSONParser.parseObject(Array("{}".utf8)) : try JSONParser.parseObject(bytes)
        } catch {
            throw QueryParameterError("the body is not a JSON object: \(error)")
        }
        if let unknown = object.members.first(where: { !Self.known.contains($0.key) }) {
            throw QueryParameterError(
                "unknown member \"\(unknown.key.prefix(64))\"; the body takes \(Self.known.sorted().joined(separator: ", "))")
        }
        selection = RejectedSelection(limit: QueryParameters.defaultLimit)
        if let ids = object["ids"] {
            guard case .array(let items, _) = ids, items.count <= RejectedSelection.maxIDs else {
                throw QueryParameterError("ids must be an array of notification ids (at most \(RejectedSelection.maxIDs))")
            }
            selection.ids = try items.map { item throws(QueryParameterError) in
                guard let text = item.scalarText, let id = Int64(text), id > 0 else {
                    throw QueryParameterError("ids must be positive whole numbers")
                }
                return id
            }
        }
        selection.provider = try Self.string(object, "provider").map(QueryParameters.provider)
        selection.account = try Self.string(object, "account")
        selection.reason = try Self.string(object, "reason").map(QueryParameters.rejectReason)
        selection.since = try Self.string(object, "since").map(QueryParameters.since)
        if let after = object["after"], after != .null {
            guard let text = after.scalarText else { throw QueryParameterError("after must be a notification id") }
            selection.afterID = try QueryParameters.seq(text, name: "after")
        }
        if let limit = object["limit"], limit != .null {
            guard let text = limit.scalarText else { throw QueryParameterError("limit must be a whole number") }
            selection.limit = try QueryParameters.limit(text, max: QueryParameters.maxAPILimit)
        }
        switch object["apply"] {
        case nil, .null?: apply = false
        case .bool(let value)?: apply = value
        default: throw QueryParameterError("apply must be true or false")
        }
    }

    private static func string(_ object: JSONObject, _ key: String) throws(QueryParameterError) -> String? {
        switch object[key] {
        case nil, .null?: return nil
        case .string(let text)? where !text.isEmpty: return text
        default: throw QueryParameterError("\(key) must be a non-empty string")
        }
    }
}
