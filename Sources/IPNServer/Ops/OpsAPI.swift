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
import HTTPTypes
import Hummingbird
import HummingbirdCore
import IPNConfig
import IPNCore
import IPNStore
import Logging
import NIOCore

/// The ops API of product.md section 4, behind `BearerAuthMiddleware`:
/// `GET /api/v1/orders`, `GET /api/v1/orders/{provider}/{order_ref}`,
/// `PUT /api/v1/orders/{provider}/{order_ref}/expectation`, `GET /api/v1/notifications`,
/// `POST /api/v1/notifications/reverify`, and the feed, deliveries and inquiries of their own files.
/// Lists are `{"items": [...], "next_cursor": ...}`, newest first, paged by id.
struct OpsAPI: Sendable {
    /// The config in force (accounts an expectation may name); a reload replaces it.
    let config: LiveConfig
    let store: any Store
    /// Asks a provider now (`POST .../inquiries`).
    let asking: any InquiryAsking
    let logger: Logger

    static let maxExpectationBodyBytes = 4096

    func register(on router: Router<IPNRequestContext>) {
        router.getAndHead("/api/v1/orders") { request, _ in await listOrders(request) }
        router.getAndHead("/api/v1/orders/:provider/:order_ref") { request, context in
            await showOrder(request, provider: context.pathParameter("provider"), orderRef: context.pathParameter("order_ref"))
        }
        router.put("/api/v1/orders/:provider/:order_ref/expectation") { request, context in
            await putExpectation(
                request, context: context, provider: context.pathParameter("provider"), orderRef: context.pathParameter("order_ref"))
        }
        router.getAndHead("/api/v1/notifications") { request, _ in await listNotifications(request) }
        EventFeed(store: store, logger: logger).register(on: router)
        DeliveriesAPI(store: store, logger: logger).register(on: router)
        InquiriesAPI(store: store, asking: asking, logger: logger).register(on: router)
        ReverifyAPI(config: config, store: store, logger: logger).register(on: router)
    }

    func listOrders(_ request: Request) async -> Response {
        let query = request.uri.queryParameters
        var filter = OrderFilter()
        do throws(QueryParameterError) {
            filter.provider = try query.nonEmpty("provider").map(QueryParameters.provider)
            filter.account = query.nonEmpty("account")
            filter.state = try query.nonEmpty("state").map(QueryParameters.state)
            filter.since = try query.nonEmpty("since").map(QueryParameters.since)
            filter.limit = try query.nonEmpty("limit").map { text throws(QueryParameterError) in
                try QueryParameters.limit(text, max: QueryParameters.maxAPILimit)
            } ?? QueryParameters.defaultLimit
            filter.beforeID = try query.nonEmpty("cursor").map { text throws(QueryParameterError) in
                try ListCursor.decode(text, list: .orders)
            }
        } catch {
            return .json(400, RecordJSON.error(error.message))
        }
        let pageSize = filter.limit
        filter.limit = pageSize + 1  // one more than asked says whether another page follows
        let chosen = filter
        return await answer {
            let orders = try await store.orders(chosen)
            let page = ListCursor.page(orders, size: pageSize, list: .orders) { $0.id }
            return .json(200, RecordJSON.page(page.rows.map(RecordJSON.order), nextCursor: page.next))
        }
    }

    func listNotifications(_ request: Request) async -> Response {
        let query = request.uri.queryParameters
        var filter = NotificationFilter()
        let includeRaw: Bool
        do throws(QueryParameterError) {
            filter.provider = try query.nonEmpty("provider").map(QueryParameters.provider)
            filter.account = query.nonEmpty("account")
            filter.verdict = try query.nonEmpty("verdict").map(QueryParameters.verdict)
            filter.since = try query.nonEmpty("since").map(QueryParameters.since)
            filter.limit = try query.nonEmpty("limit").map { text throws(QueryParameterError) in
                try QueryParameters.limit(text, max: QueryParameters.maxAPILimit)
            } ?? QueryParameters.defaultLimit
            filter.beforeID = try query.nonEmpty("cursor").map { text throws(QueryParameterError) in
                try ListCursor.decode(text, list: .notifications)
            }
            includeRaw = try query.includesRaw()
        } catch {
            return .json(400, RecordJSON.error(error.message))
        }
        let pageSize = filter.limit
        filter.limit = pageSize + 1
        let chosen = filter
        return await answer {
            let notifications = try await store.notifications(chosen, includeRaw: includeRaw)
            let page = ListCursor.page(notifications, size: pageSize, list: .notifications) { $0.id }
            return .json(200, RecordJSON.page(page.rows.map { RecordJSON.notification($0, includeRaw: includeRaw) }, nextCursor: page.next))
        }
    }

    func showOrder(_ request: Request, provider: String, orderRef: String) async -> Response {
        let query = request.uri.queryParameters
        let account = query.nonEmpty("account") ?? "default"
        let includeRaw: Bool
        do throws(QueryParameterError) {
            includeRaw = try query.includesRaw()
        } catch {
            return .json(400, RecordJSON.error(error.message))
        }
        return await answer {
            let detail = try await store.order(provider: provider, account: account, orderRef: orderRef, includeRaw: includeRaw)
            guard let detail else {
                return .json(404, RecordJSON.error("no order \"\(orderRef.prefix(128))\" for \(provider.prefix(32))/\(account.prefix(128))"))
            }
            return .json(200, RecordJSON.orderDetail(detail.scheduledOnlyWhenAsked(by: asking.scopes), includeRaw: includeRaw))
        }
    }

    func putExpectation(_ request: Request, context: IPNRequestContext, provider: String, orderRef: String) async -> Response {
        // The rest is not read: the connection ends with the answer.
        let tooLarge = Response.json(413, RecordJSON.error("the body is larger than \(Self.maxExpectationBodyBytes) bytes"))
            .closingConnection(context.channel)
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > Self.maxExpectationBodyBytes {
            return tooLarge
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: Self.maxExpectationBodyBytes)
        } catch {
            return tooLarge
        }
        let expectation: ExpectationBody
        do {
            expectation = try ExpectationBody(Array(buffer: body))
        } catch {
            return .json(400, RecordJSON.error(error.message))
        }
        do throws(QueryParameterError) {
            _ = try QueryParameters.provider(provider)
        } catch {
            return .json(404, RecordJSON.error(error.message))
        }
        guard config.current.account(provider: provider, name: expectation.account) != nil else {
            return .json(404, RecordJSON.error("no account \"\(expectation.account.prefix(128))\" for provider \"\(provider.prefix(32))\" in the config"))
        }
        do throws(QueryParameterError) {
            _ = try QueryParameters.orderReference(orderRef)
        } catch {
            return .json(400, RecordJSON.error(error.message))
        }
        let account = expectation.account
        return await answer {
            let outcome = try await store.setExpectation(
                provider: provider, account: account, orderRef: orderRef, amount: expectation.amount)
            var metadata: Logger.Metadata = [
                "provider": "\(provider)", "account": "\(account)", "order_ref": "\(orderRef)",
                "expected": "\(expectation.amount)", "order_state": "\(outcome.state.rawValue)", "via": "ops_api",
            ]
            if let mismatch = outcome.mismatch {
                metadata["detail"] = "\(mismatch)"
                logger.warning("expectation registered; order flagged amount_mismatch", metadata: metadata)
            } else {
                logger.info("expectation registered", metadata: metadata)
            }
            let detail = try await store.order(provider: provider, account: account, orderRef: orderRef, includeRaw: false)
            guard let detail else { throw StoreError(message: "the order vanished after its expectation was committed") }
            return .json(200, RecordJSON.order(detail.order))
        }
    }

    private func answer(_ body: () async throws -> Response) async -> Response {
        await Response.storeOperation(logger: logger, body)
    }
}

/// `{"account": "default", "amount": "12.34", "currency": "USD"}`; `account` may be left out
/// (`default`), `amount` may be a JSON number, other members are refused.
struct ExpectationBody {
    let account: String
    let amount: Money

    init(_ bytes: [UInt8]) throws(QueryParameterError) {
        let object: JSONObject
        do {
            object = try JSONParser.parseObject(bytes)
        } catch {
            throw QueryParameterError("the body is not a JSON object: \(error)")
        }
        let known: Set<String> = ["account", "amount", "currency"]
        if let unknown = object.members.first(where: { !known.contains($0.key) }) {
            throw QueryParameterError("unknown member \"\(unknown.key.prefix(64))\"; the body takes account, amount and currency")
        }
        switch object["account"] {
        case nil, .null?: account = "default"
        case .string(let name)? where !name.isEmpty: account = name
        default: throw QueryParameterError("account must be a non-empty string")
        }
        guard let amountText = object["amount"]?.scalarText else {
            throw QueryParameterError("amount is required, as a decimal string such as \"12.34\"")
        }
        guard let currency = object.string("currency") else {
            throw QueryParameterError("currency is required, as an ISO 4217 code such as \"USD\"")
        }
        do {
            amount = try Money.parseMajor(amountText, currency: currency)
        } catch {
            throw QueryParameterError(error.description)
        }
    }
}

extension FlatDictionary<Substring, Substring> {
    /// The value of query parameter `name`; nil when absent or empty.
    func nonEmpty(_ name: Substring) -> String? {
        guard let value = self[name], !value.isEmpty else { return nil }
        return String(value)
    }

    /// `include=raw` (or a comma-separated list naming `raw`); any other value is refused, so a
    /// mistyped `include=RAW` is not answered without the bodies asked for.
    func includesRaw() throws(QueryParameterError) -> Bool {
        var raw = false
        for value in self[values: "include"] {
            for item in value.split(separator: ",") {
                guard item == "raw" else {
                    throw QueryParameterError("include \"\(item.prefix(64))\" is not one of: raw")
                }
                raw = true
            }
        }
        return raw
    }
}

extension IPNRequestContext {
    /// A path parameter, percent-decoded (the router matches on the encoded path).
    func pathParameter(_ name: String) -> String {
        let raw = parameters.get(name) ?? ""
        return raw.removingPercentEncoding ?? raw
    }
}

extension Response {
    /// A JSON answer of the ops API.
    static func json(_ status: Int, _ value: JSONOut) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(
            status: HTTPResponse.Status(code: status), headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(string: value.text)))
    }

    /// Runs a store operation of the ops API; a store failure is a 503 the client may retry.
    static func storeOperation(logger: Logger, _ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch {
            return storeUnavailable(error, logger: logger)
        }
    }

    /// The 503 of an ops API call the store failed.
    static func storeUnavailable(_ error: any Error, logger: Logger) -> Response {
        logger.error("ops API: store unavailable", metadata: ["error": "\(error)"])
        var response = Response.json(503, RecordJSON.error("store unavailable, retry later"))
        response.headers[.retryAfter] = "5"
        return response
    }
}
