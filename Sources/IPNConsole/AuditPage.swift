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

import HTTPTypes
import Hummingbird
import IPNCore
import IPNStore

extension OpsConsole {
    /// `GET /audit` (admins): the audit trail with the filters of `ipnd audit list` (actor,
    /// action, outcome, since), newest first, a page at a time, keyset-paged by id.
    func auditPage(_ request: Request) async -> Response {
        let query = FormQuery(request.uri)
        func value(_ name: String) -> String? { query[name].flatMap { $0.isEmpty ? nil : $0 } }
        let filters = ListFilters(query)
        var filter = AuditFilter(limit: Self.pageSize + 1)
        var problem: String?
        filter.actor = value("actor")
        do throws(FilterError) {
            if let action = value("action") {
                guard AuditAction(rawValue: action) != nil else {
                    throw FilterError("action \"\(action.prefix(64))\" is not one of \(AuditAction.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                filter.action = action
            }
            if let outcome = value("outcome") {
                guard let chosen = AuditOutcome(rawValue: outcome) else {
                    throw FilterError("outcome \"\(outcome.prefix(64))\" is not one of ok, refused, error")
                }
                filter.outcome = chosen
            }
            filter.since = try filters.since()
            filter.beforeID = try filters.before()
        } catch {
            problem = error.message
        }
        let chosen = filter
        func link(before: Int64?) -> String {
            URLText.link("/audit", [
                ("actor", value("actor")), ("action", value("action")), ("outcome", value("outcome")), ("since", value("since")),
                ("before", before.map { "\($0)" }),
            ])
        }
        return await page(request) { () async throws(StoreError) -> Response in
            let rows = problem == nil ? try await store.auditRecords(chosen) : []
            let model = AuditPage(
                actorFilter: value("actor") ?? "",
                actionOptions: SelectOption.list(AuditAction.allCases.map(\.rawValue), selected: value("action")),
                outcomeOptions: SelectOption.list(AuditOutcome.allCases.map(\.rawValue), selected: value("outcome")),
                sinceFilter: value("since") ?? "",
                auditRows: rows.prefix(Self.pageSize).map(AuditRow.init),
                firstPageLink: chosen.beforeID == nil ? nil : link(before: nil),
                nextPageLink: rows.count > Self.pageSize ? link(before: rows[Self.pageSize - 1].id) : nil)
            return render("audit", title: "Audit", current: "/audit", request: request, page: model,
                          status: problem == nil ? .ok : .badRequest, error: problem)
        }
    }
}

/// The audit page's values.
struct AuditPage: Sendable {
    let actorFilter: String
    let actionOptions: [SelectOption]
    let outcomeOptions: [SelectOption]
    let sinceFilter: String
    let auditRows: [AuditRow]
    let firstPageLink: String?
    let nextPageLink: String?
}

/// A row of the audit table.
struct AuditRow: Sendable {
    let auditID: Int64
    let auditAt: String
    let auditActor: String
    let auditRole: String
    let auditVia: String
    let auditAction: String
    let auditTarget: String
    let auditOutcome: String
    let auditClient: String
    let auditDetail: String

    init(_ record: AuditRecord) {
        auditID = record.id
        auditAt = record.at
        auditActor = record.actor
        auditRole = record.role ?? ""
        auditVia = record.via
        auditAction = record.action
        auditTarget = record.target ?? ""
        auditOutcome = record.outcome
        auditClient = record.clientIP ?? ""
        auditDetail = record.detail == "{}" ? "" : record.detail
    }
}
