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

/// `GET /api/v1/events?after=&limit=&wait=&provider=&account=&type=`: the order-event feed,
/// ascending by seq, `{"events": [...], "next_after": SEQ}`. With `wait`, a request that finds
/// nothing newer is held until an event commits (answered within a second of its commit, also
/// one committed by another node) or the time passes. An `after` older than what retention
/// kept answers 410 with `oldest_seq`.
struct EventFeed: Sendable {
    let store: any Store
    let logger: Logger

    /// How often a waiting request looks again when nothing wakes it: another node's commits
    /// are only found by looking.
    static let pollInterval: Duration = .milliseconds(250)

    func register(on router: Router<IPNRequestContext>) {
        router.getAndHead("/api/v1/events") { request, _ in await handle(request) }
    }

    func handle(_ request: Request) async -> Response {
        let query = request.uri.queryParameters
        var filter = EventFilter()
        let wait: Duration
        do throws(QueryParameterError) {
            filter.after = try query.nonEmpty("after").map { text throws(QueryParameterError) in try QueryParameters.seq(text) } ?? 0
            filter.limit = try query.nonEmpty("limit").map { text throws(QueryParameterError) in
                try QueryParameters.limit(text, max: QueryParameters.maxAPILimit)
            } ?? QueryParameters.defaultLimit
            wait = try query.nonEmpty("wait").map(QueryParameters.wait) ?? .zero
            filter.provider = try query.nonEmpty("provider").map(QueryParameters.provider)
            filter.account = query.nonEmpty("account")
            filter.type = try query.nonEmpty("type").map(QueryParameters.eventType)
        } catch {
            return .json(400, RecordJSON.error(error.message))
        }
        let deadline = ContinuousClock.now + wait
        do {
            while true {
                let generation = store.eventSignal.generation
                var page = try await store.events(filter)
                if let oldest = page.oldestSeq {
                    return .json(410, .object([
                        ("error", .string("events after \(filter.after) are no longer kept; resync from orders list, then read after \(oldest - 1)")),
                        ("oldest_seq", .int(oldest)),
                    ]))
                }
                let remaining = deadline - ContinuousClock.now
                if !page.events.isEmpty || remaining <= .zero || Task.isCancelled {
                    page.nextAfter = max(page.nextAfter, filter.after)
                    return .json(200, RecordJSON.eventPage(page))
                }
                // Nothing matched: look again from where this look ended.
                filter.after = page.nextAfter
                await store.eventSignal.wait(since: generation, timeout: min(remaining, Self.pollInterval))
            }
        } catch {
            logger.error("ops API: store unavailable", metadata: ["error": "\(error)"])
            var response = Response.json(503, RecordJSON.error("store unavailable, retry later"))
            response.headers[.retryAfter] = "5"
            return response
        }
    }
}
