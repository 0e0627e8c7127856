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

/// Reconciliation's ops API (product.md section 12):
/// `POST /api/v1/orders/{provider}/{order_ref}/inquiries?account=` asks the provider now and
/// answers 200 with the inquiry record whatever its outcome (404 for an unknown order, 409 for
/// an account without `inquiry`); `GET /api/v1/inquiries?provider=&account=&order_ref=&outcome=
/// &since=&limit=&cursor=` lists inquiries newest first, paged like the other lists.
struct InquiriesAPI: Sendable {
    let store: any Store
    let asking: any InquiryAsking
    let logger: Logger

    func register(on router: Router<IPNRequestContext>) {
        router.getAndHead("/api/v1/inquiries") { request, _ in await list(request) }
        router.post("/api/v1/orders/:provider/:order_ref/inquiries") { request, context in
            await ask(request, provider: context.pathParameter("provider"), orderRef: context.pathParameter("order_ref"))
        }
    }

    func list(_ request: Request) async -> Response {
        let query = request.uri.queryParameters
        var filter = InquiryFilter()
        do throws(QueryParameterError) {
            filter.provider = try query.nonEmpty("provider").map(QueryParameters.provider)
            filter.account = query.nonEmpty("account")
            filter.orderRef = try query.nonEmpty("order_ref").map(QueryParameters.orderReference)
            filter.outcome = try query.nonEmpty("outcome").map(QueryParameters.inquiryOutcome)
            filter.since = try query.nonEmpty("since").map(QueryParameters.since)
            filter.limit = try query.nonEmpty("limit").map { text throws(QueryParameterError) in
                try QueryParameters.limit(text, max: QueryParameters.maxAPILimit)
            } ?? QueryParameters.defaultLimit
            filter.beforeID = try query.nonEmpty("cursor").map { text throws(QueryParameterError) in
                try ListCursor.decode(text, list: .inquiries)
            }
        } catch {
            return .json(400, RecordJSON.error(error.message))
        }
        let pageSize = filter.limit
        filter.limit = pageSize + 1
        let chosen = filter
        return await Response.storeOperation(logger: logger) {
            let inquiries = try await store.inquiries(chosen)
            let page = ListCursor.page(inquiries, size: pageSize, list: .inquiries) { $0.id }
            return .json(200, RecordJSON.page(page.rows.map(RecordJSON.inquiry), nextCursor: page.next))
        }
    }

    func ask(_ request: Request, provider: String, orderRef: String) async -> Response {
        let account = request.uri.queryParameters.nonEmpty("account") ?? "default"
        do throws(QueryParameterError) {
            _ = try QueryParameters.provider(provider)
        } catch {
            return .json(404, RecordJSON.error(error.message))
        }
        do {
            let record = try await asking.ask(provider: provider, account: account, orderRef: orderRef, trigger: .api)
            return .json(200, RecordJSON.inquiry(record))
        } catch {
            switch error {
            case .unknownOrder:
                return .json(404, RecordJSON.error(
                    "no order \"\(orderRef.prefix(128))\" for \(provider.prefix(32))/\(account.prefix(128)); register it with orders expect first"))
            case .noInquiry:
                return .json(409, RecordJSON.error(
                    "account \(provider.prefix(32))/\(account.prefix(128)) has no inquiry section in the config: it is never asked"))
            case .store(let failure):
                return .storeUnavailable(failure, logger: logger)
            }
        }
    }
}
