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
import Logging

extension OpsConsole {
    /// `GET /orders`: the filters of `orders list` (provider, account, state, since), newest
    /// first, a page at a time; or, with `q`, a search by reference prefix across providers.
    func ordersPage(_ request: Request) async -> Response {
        let query = FormQuery(request.uri)
        let filters = ListFilters(query)
        var filter = OrderFilter(limit: Self.pageSize + 1)
        var problem: String?
        do throws(FilterError) {
            filter.provider = try filters.provider()
            filter.account = try filters.account(in: config.accountNames, provider: filter.provider)
            filter.state = try filters.state()
            filter.since = try filters.since()
            filter.beforeID = try filters.before()
        } catch {
            problem = error.message
        }
        let search = query["q"].flatMap { $0.isEmpty ? nil : $0 }
        let chosen = filter
        return await page(request) { () async throws(StoreError) -> Response in
            var rows: [OrderRecord] = []
            var next: String?
            if problem == nil, let search {
                var after: OrderSearch.Position?
                if let ref = query["after_ref"], let id = query["after_id"].flatMap({ Int64($0) }) {
                    after = OrderSearch.Position(orderRef: ref, id: id)
                }
                rows = try await store.searchOrders(OrderSearch(referencePrefix: search, after: after, limit: Self.pageSize + 1))
                if rows.count > Self.pageSize {
                    let last = rows[Self.pageSize - 1]
                    next = URLText.link("/orders", [("q", search), ("after_ref", last.orderRef), ("after_id", "\(last.id)")])
                }
            } else if problem == nil {
                rows = try await store.orders(chosen)
                if rows.count > Self.pageSize {
                    next = filters.link("/orders", before: rows[Self.pageSize - 1].id)
                }
            }
            let isLaterPage = search == nil ? chosen.beforeID != nil : query["after_ref"] != nil
            let model = OrdersPage(
                providerOptions: SelectOption.list(ListFilters.providerNames, selected: filters.providerText),
                accountFilter: filters.account ?? "",
                stateOptions: SelectOption.list(OrderState.allCases.map(\.rawValue), selected: filters.stateText),
                sinceFilter: filters.sinceText ?? "", searchText: search ?? "", searching: search != nil,
                orderRows: rows.prefix(Self.pageSize).map(OrderRow.init),
                firstPageLink: isLaterPage ? (search.map { URLText.link("/orders", [("q", $0)]) } ?? filters.link("/orders")) : nil,
                nextPageLink: next)
            return render("orders", title: search.map { "Orders starting with \($0)" } ?? "Orders", current: "/orders",
                          request: request, page: model, status: problem == nil ? .ok : .badRequest, error: problem)
        }
    }

    /// `GET /orders/{provider}/{account}/{order_ref}`: the order, one timeline of its
    /// notifications, transitions and events (raw requests with `?raw=1`), its deliveries and
    /// the expectation form.
    func orderPage(_ request: Request, key: OrderKey, error: String? = nil, status: HTTPResponse.Status = .ok) async -> Response {
        let showRaw = FormQuery(request.uri)["raw"] == "1"
        return await page(request) { () async throws(StoreError) -> Response in
            guard let detail = try await store.order(
                provider: key.provider, account: key.account, orderRef: key.orderRef, includeRaw: showRaw)
            else {
                return message(
                    "No order \"\(key.orderRef)\" for \(key.provider)/\(key.account).", title: "No such order",
                    status: .notFound, request: request, back: ("/orders", "Orders"))
            }
            let deliveries = try await store.deliveries(orderID: detail.order.id)
            let asked = asking.scopes.contains(Scope(provider: key.provider, account: key.account))
            let model = OrderPage(
                detail: detail.scheduledOnlyWhenAsked(by: asking.scopes), deliveries: deliveries, showRaw: showRaw, path: key.path,
                asked: asked)
            return render("order", title: "Order \(detail.order.orderRef)", current: "/orders", request: request,
                          page: model, status: status, error: error)
        }
    }

    /// `POST /orders/{provider}/{account}/{order_ref}/expectation`: registers the amount and
    /// currency, as `ipnd orders expect` does, and goes back to the order.
    func registerExpectation(_ request: Request, key: OrderKey) async -> Response {
        guard let form = await ConsoleForm.read(request) else {
            return await orderPage(request, key: key, error: "The form could not be read.", status: .badRequest)
        }
        guard ProviderRegistry.provider(named: key.provider) != nil, config.hasAccount(provider: key.provider, name: key.account) else {
            return message(
                "There is no account \"\(key.account)\" for provider \"\(key.provider)\" in the config.", title: "No such account",
                status: .notFound, request: request, back: ("/orders", "Orders"))
        }
        guard !key.orderRef.isEmpty, NotificationLimits.identifierProblem(key.orderRef) == nil else {
            return message(
                "The order reference must be 1 to \(NotificationLimits.maxIdentifierBytes) bytes, with no control characters.",
                title: "Bad order reference", status: .badRequest, request: request, back: ("/orders", "Orders"))
        }
        let amount: Money
        do {
            amount = try Money.parseMajor(form["amount"] ?? "", currency: (form["currency"] ?? "").uppercased())
        } catch {
            return await orderPage(request, key: key, error: "The expectation was not registered: \(error)", status: .badRequest)
        }
        return await page(request) { () async throws(StoreError) -> Response in
            let outcome = try await store.setExpectation(
                provider: key.provider, account: key.account, orderRef: key.orderRef, amount: amount)
            var metadata: Logger.Metadata = [
                "provider": "\(key.provider)", "account": "\(key.account)", "order_ref": "\(key.orderRef)",
                "expected": "\(amount)", "order_state": "\(outcome.state.rawValue)", "via": "console",
            ]
            if let mismatch = outcome.mismatch {
                metadata["detail"] = "\(mismatch)"
                logger.warning("expectation registered; order flagged amount_mismatch", metadata: metadata)
                return Self.redirect(Flash.path(key.path, done: "expectation-mismatch"))
            }
            logger.info("expectation registered", metadata: metadata)
            return Self.redirect(Flash.path(key.path, done: "expectation"))
        }
    }
}

extension OpsConsole {
    /// `POST /orders/{provider}/{account}/{order_ref}/inquiries`: asks the provider about the
    /// order now, as `ipnd orders reconcile` does, and goes back to the order with the outcome.
    func askProvider(_ request: Request, key: OrderKey) async -> Response {
        do {
            let record = try await asking.ask(provider: key.provider, account: key.account, orderRef: key.orderRef, trigger: .console)
            return Self.redirect(Flash.path(key.path, done: "inquiry") + "&outcome=\(record.outcome.rawValue)")
        } catch {
            switch error {
            case .unknownOrder:
                return message(
                    "No order \"\(key.orderRef)\" for \(key.provider)/\(key.account).", title: "No such order",
                    status: .notFound, request: request, back: ("/orders", "Orders"))
            case .noInquiry:
                return await orderPage(
                    request, key: key, error: "This account has no inquiry section in the config: ipnd never asks its provider.",
                    status: .conflict)
            case .store(let failure):
                logger.error("console: store unavailable", metadata: ["error": "\(failure)"])
                return await orderPage(request, key: key, error: "The answer could not be recorded: the store is unavailable.",
                                       status: .serviceUnavailable)
            }
        }
    }
}

/// The orders page's values.
struct OrdersPage: Sendable {
    let providerOptions: [SelectOption]
    let accountFilter: String
    let stateOptions: [SelectOption]
    let sinceFilter: String
    let searchText: String
    let searching: Bool
    let orderRows: [OrderRow]
    let firstPageLink: String?
    let nextPageLink: String?
}

/// The order page's values.
struct OrderPage: Sendable {
    let orderRef: String
    let provider: String
    let account: String
    let state: String
    let amount: String
    let refunded: String
    let expected: String
    let flagList: [String]
    let providerTxnID: String
    let createdAt: String
    let updatedAt: String
    let expectationAction: String
    /// The currency the form starts with: the expected or paid one, if any.
    let currencyGuess: String
    let rawShown: Bool
    let rawToggleLink: String
    let timeline: [TimelineEntry]
    let deliveryRows: [DeliveryRow]
    /// Where a retry from this page comes back to.
    let returnPath: String
    /// The account has an `inquiry` section: the page offers "Ask the provider now".
    let asked: Bool
    let askAction: String
    let nextInquiryAt: String?
    let inquiryRows: [InquiryRow]

    init(detail: OrderDetail, deliveries: [DeliveryRecord], showRaw: Bool, path: String, asked: Bool) {
        let order = detail.order
        orderRef = order.orderRef
        provider = order.provider
        account = order.account
        state = order.state.rawValue
        amount = order.amount?.description ?? "none"
        refunded = order.refundedMinor == 0 ? "none" : Money.decimalText(minor: order.refundedMinor, currency: order.amount?.currency ?? "")
            + " " + (order.amount?.currency ?? "")
        expected = order.expected?.description ?? "none registered"
        flagList = order.flags
        providerTxnID = order.providerTxnID ?? ""
        createdAt = order.createdAt
        updatedAt = order.updatedAt
        expectationAction = path + "/expectation"
        currencyGuess = order.expected?.currency ?? order.amount?.currency ?? ""
        rawShown = showRaw
        rawToggleLink = showRaw ? path : path + "?raw=1"
        timeline = TimelineEntry.merge(detail)
        deliveryRows = deliveries.map(DeliveryRow.init)
        returnPath = path
        self.asked = asked
        askAction = path + "/inquiries"
        nextInquiryAt = detail.nextInquiryAt
        inquiryRows = detail.inquiries.map(InquiryRow.init)
    }
}

/// One line of an order's timeline: a notification, a transition or an event.
struct TimelineEntry: Sendable {
    let entryKind: String
    let entryTime: String
    let tlNotification: NotificationItem?
    let tlTransition: TransitionItem?
    let tlEvent: EventItem?

    struct NotificationItem: Sendable {
        let noteID: Int64
        let noteLink: String
        let noteVerdict: String
        let noteReason: String?
        let noteStatus: String?
        let noteKind: String?
        let noteAmount: String?
        let noteDetail: String?
        let noteRaw: RawRequestView?
    }

    struct TransitionItem: Sendable {
        let fromState: String?
        let toState: String
        let causeID: Int64
        let causeLink: String?
    }

    struct EventItem: Sendable {
        let eventSeq: Int64
        let eventType: String
        let eventFlag: String?
        let eventID: String
    }

    /// Notifications by when they arrived, the transitions and events by when they were
    /// committed; at the same millisecond a notification comes before what it caused.
    static func merge(_ detail: OrderDetail) -> [TimelineEntry] {
        var keyed: [(time: String, rank: Int, order: Int64, entry: TimelineEntry)] = []
        for note in detail.notifications {
            let item = NotificationItem(
                noteID: note.id, noteLink: "/notifications/\(note.id)", noteVerdict: note.verdict.rawValue,
                noteReason: note.reason, noteStatus: note.providerStatus, noteKind: note.kind,
                noteAmount: note.amount?.description, noteDetail: note.reasonDetail, noteRaw: RawRequestView(note))
            keyed.append((note.receivedAt, 0, note.id, TimelineEntry(
                entryKind: "notification", entryTime: note.receivedAt, tlNotification: item, tlTransition: nil, tlEvent: nil)))
        }
        for (index, transition) in detail.transitions.enumerated() {
            let item = TransitionItem(
                fromState: transition.from?.rawValue, toState: transition.to.rawValue, causeID: transition.notificationID ?? 0,
                causeLink: transition.notificationID.map { "/notifications/\($0)" })
            keyed.append((transition.at, 1, Int64(index), TimelineEntry(
                entryKind: "transition", entryTime: transition.at, tlNotification: nil, tlTransition: item, tlEvent: nil)))
        }
        for event in detail.events {
            let item = EventItem(eventSeq: event.seq, eventType: event.type.rawValue, eventFlag: event.flag, eventID: event.id)
            keyed.append((event.occurredAt, 2, event.seq, TimelineEntry(
                entryKind: "event", entryTime: event.occurredAt, tlNotification: nil, tlTransition: nil, tlEvent: item)))
        }
        return keyed.sorted { ($0.time, $0.rank, $0.order) < ($1.time, $1.rank, $1.order) }.map(\.entry)
    }
}
