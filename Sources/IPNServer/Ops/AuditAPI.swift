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

import Hummingbird
import IPNCore
import IPNStore
import Logging

/// `GET /api/v1/audit?actor=&action=&outcome=&since=&limit=&cursor=` (admins): the audit trail,
/// newest first, keyset-paged like the other lists.
struct AuditAPI: Sendable {
    let store: any Store
    let logger: Logger

    func register(on router: Router<IPNRequestContext>) {
        router.getAndHead("/api/v1/audit") { request, _ in await list(request) }
    }

    func list(_ request: Request) async -> Response {
        let query = request.uri.queryParameters
        var filter = AuditFilter()
        do throws(QueryParameterError) {
            filter.actor = query.nonEmpty("actor")
            filter.action = try query.nonEmpty("action").map(QueryParameters.auditAction)
            filter.outcome = try query.nonEmpty("outcome").map(QueryParameters.auditOutcome)
            filter.since = try query.nonEmpty("since").map(QueryParameters.since)
            filter.limit = try query.nonEmpty("limit").map { text throws(QueryParameterError) in
                try QueryParameters.limit(text, max: QueryParameters.maxAPILimit)
            } ?? QueryParameters.defaultLimit
            filter.beforeID = try query.nonEmpty("cursor").map { text throws(QueryParameterError) in
                try ListCursor.decode(text, list: .audit)
            }
        } catch {
            return .json(400, RecordJSON.error(error.message))
        }
        let pageSize = filter.limit
        filter.limit = pageSize + 1
        let chosen = filter
        return await Response.storeOperation(logger: logger) {
            let records = try await store.auditRecords(chosen)
            let page = ListCursor.page(records, size: pageSize, list: .audit) { $0.id }
            return .json(200, RecordJSON.page(page.rows.map(\.json), nextCursor: page.next))
        }
    }
}

extension QueryParameters {
    /// One of the audit trail's actions.
    public static func auditAction(_ text: String) throws(QueryParameterError) -> String {
        guard AuditAction(rawValue: text) != nil else {
            throw QueryParameterError("action \"\(text.prefix(64))\" is not one of \(AuditAction.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return text
    }

    /// `ok`, `refused` or `error`.
    public static func auditOutcome(_ text: String) throws(QueryParameterError) -> AuditOutcome {
        guard let outcome = AuditOutcome(rawValue: text) else {
            throw QueryParameterError("outcome \"\(text.prefix(64))\" is not one of ok, refused, error")
        }
        return outcome
    }
}
