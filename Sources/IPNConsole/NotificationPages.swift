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
    /// `GET /notifications`: the filters of `notifications list` (provider, account, verdict,
    /// since), newest first, a page at a time, and the rejections in the window by reason.
    func notificationsPage(_ request: Request) async -> Response {
        let filters = ListFilters(FormQuery(request.uri))
        var filter = NotificationFilter(limit: Self.pageSize + 1)
        var problem: String?
        do throws(FilterError) {
            filter.provider = try filters.provider()
            filter.account = try filters.account(in: config.accountNames, provider: filter.provider)
            filter.verdict = try filters.verdict()
            filter.since = try filters.since()
            filter.beforeID = try filters.before()
        } catch {
            problem = error.message
        }
        let chosen = filter
        return await page(request) { () async throws(StoreError) -> Response in
            let window = OverviewWindow(nowMilliseconds: Self.nowMilliseconds())
            // The counts are per hour: a `since` counts from the start of its hour.
            let countsSince = chosen.since.map(HourlyNotificationCount.hour(of:)) ?? window.start
            var rows: [NotificationRecord] = []
            var counts: [HourlyNotificationCount] = []
            if problem == nil {
                rows = try await store.notifications(chosen, includeRaw: false)
                counts = try await store.notificationCounts(since: countsSince).filter { count in
                    (chosen.provider.map { $0 == count.provider } ?? true) && (chosen.account.map { $0 == count.account } ?? true)
                }
            }
            let model = NotificationsPage(
                providerOptions: SelectOption.list(ListFilters.providerNames, selected: filters.providerText),
                accountFilter: filters.account ?? "",
                verdictOptions: SelectOption.list(Verdict.allCases.map(\.rawValue), selected: filters.verdictText),
                sinceFilter: filters.sinceText ?? "",
                rejectionWindow: chosen.since == nil
                    ? "The current hour and the 23 before it (since \(window.start))."
                    : "Since \(countsSince) (counted by the hour).",
                rejections: rejectionCounts(counts, since: chosen.since ?? window.start, provider: chosen.provider, account: chosen.account),
                notificationRows: rows.prefix(Self.pageSize).map(NotificationRow.init),
                firstPageLink: chosen.beforeID == nil ? nil : filters.link("/notifications"),
                nextPageLink: rows.count > Self.pageSize ? filters.link("/notifications", before: rows[Self.pageSize - 1].id) : nil)
            return render("notifications", title: "Notifications", current: "/notifications", request: request,
                          page: model, status: problem == nil ? .ok : .badRequest, error: problem)
        }
    }

    /// `GET /notifications/{id}`: one notification with its stored headers and raw body.
    func notificationPage(_ request: Request, id text: String) async -> Response {
        guard let id = Int64(text), id > 0 else {
            return message("\"\(text.prefix(64))\" is not a notification id.", title: "No such notification", status: .notFound,
                           request: request, back: ("/notifications", "Notifications"))
        }
        return await page(request) { () async throws(StoreError) -> Response in
            guard let note = try await store.notification(id: id, includeRaw: true) else {
                return message("There is no notification \(id).", title: "No such notification", status: .notFound,
                               request: request, back: ("/notifications", "Notifications"))
            }
            return render("notification", title: "Notification \(id)", current: "/notifications", request: request,
                          page: NotificationPage(note))
        }
    }
}

/// The notifications page's values.
struct NotificationsPage: Sendable {
    let providerOptions: [SelectOption]
    let accountFilter: String
    let verdictOptions: [SelectOption]
    let sinceFilter: String
    let rejectionWindow: String
    let rejections: [ReasonCount]
    let notificationRows: [NotificationRow]
    let firstPageLink: String?
    let nextPageLink: String?
}

/// A row of the notifications table.
struct NotificationRow: Sendable {
    let rowID: Int64
    let rowLink: String
    let rowReceived: String
    let rowProvider: String
    let rowAccount: String
    let rowOrderRef: String
    /// The order's page, when the notification is linked to an order.
    let rowOrderLink: String?
    let rowVerdict: String
    let rowReason: String
    let rowStatus: String
    let rowClient: String

    init(_ note: NotificationRecord) {
        rowID = note.id
        rowLink = "/notifications/\(note.id)"
        rowReceived = note.receivedAt
        rowProvider = note.provider
        rowAccount = note.account
        rowOrderRef = note.orderRef ?? ""
        rowOrderLink = note.orderRef.map { URLText.order(provider: note.provider, account: note.account, orderRef: $0) }
        rowVerdict = note.verdict.rawValue
        rowReason = note.reason ?? ""
        rowStatus = note.providerStatus ?? ""
        rowClient = note.clientIP ?? ""
    }
}

/// One notification's page.
struct NotificationPage: Sendable {
    let noteID: Int64
    let noteReceived: String
    let noteProvider: String
    let noteAccount: String
    let noteOrderRef: String
    let noteOrderLink: String?
    let noteVerdict: String
    let noteReason: String
    let noteReasonDetail: String
    let noteKind: String
    let noteStatus: String
    let noteAmount: String
    let noteTxnID: String
    let noteDedupKey: String
    let noteClient: String
    let noteReverifiedFrom: Int64
    let noteReverifiedLink: String?
    let noteDetail: String
    let noteRaw: RawRequestView?

    init(_ note: NotificationRecord) {
        noteID = note.id
        noteReceived = note.receivedAt
        noteProvider = note.provider
        noteAccount = note.account
        noteOrderRef = note.orderRef ?? ""
        noteOrderLink = note.orderRef.map { URLText.order(provider: note.provider, account: note.account, orderRef: $0) }
        noteVerdict = note.verdict.rawValue
        noteReason = note.reason ?? ""
        noteReasonDetail = note.reasonDetail ?? ""
        noteKind = note.kind ?? ""
        noteStatus = note.providerStatus ?? ""
        noteAmount = note.amount?.description ?? ""
        noteTxnID = note.providerTxnID ?? ""
        noteDedupKey = note.dedupKey ?? ""
        noteClient = note.clientIP ?? ""
        noteReverifiedFrom = note.reverifiedFrom ?? 0
        noteReverifiedLink = note.reverifiedFrom.map { "/notifications/\($0)" }
        noteDetail = note.detail ?? ""
        noteRaw = RawRequestView(note)
    }
}
