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
import IPNConfig
import IPNCore
import IPNStore
import Logging
import NIOCore

/// `POST /ipn/{provider}[/{account}]`: read the body within the limit, resolve the account and
/// client, verify, record (committed), and only then answer with the provider's exact bytes.
/// A rejected request is stored only within its client's budget (`RejectedStoreBudget`).
struct ProviderEndpoint: Sendable {
    /// The config in force; a reload replaces it. Each request takes it once, at its start.
    let live: LiveConfig
    /// The config this request is served under (`live`'s value when it started).
    private(set) var config: IPNDConfig
    let store: any Store
    let logger: Logger
    let metrics: ServerMetrics
    let tally: NotificationTally
    let budget: RejectedStoreBudget
    /// The budget's clock (the time of day; tests inject theirs).
    var now: @Sendable () -> Date = { Date() }

    init(live: LiveConfig, store: any Store, logger: Logger, metrics: ServerMetrics, tally: NotificationTally,
         budget: RejectedStoreBudget, now: @escaping @Sendable () -> Date = { Date() }) {
        self.live = live
        config = live.current
        self.store = store
        self.logger = logger
        self.metrics = metrics
        self.tally = tally
        self.budget = budget
        self.now = now
    }

    func handle(_ request: Request, context: IPNRequestContext, providerName: String, accountName: String) async -> Response {
        // A reload during the request does not change the account or secrets it is checked with.
        var endpoint = self
        endpoint.config = live.current
        return await endpoint.serve(request, context: context, providerName: providerName, accountName: accountName)
    }

    private func serve(_ request: Request, context: IPNRequestContext, providerName: String, accountName: String) async -> Response {
        let started = ContinuousClock.now
        guard let providerType = ProviderRegistry.provider(named: providerName) else {
            return Response.plain(404, "unknown provider\n").closingIfBodyUnread(request, context: context)
        }
        let body: ReceivedBody
        switch await readBody(request, context: context, provider: providerName, account: accountName) {
        case .tooLarge(let response): return response
        case .received(let received): body = received
        }
        let clientIP = clientAddress(of: request, context: context)
        let raw = RawRequest(
            method: request.method.rawValue,
            target: request.uri.string,
            headers: request.headers.map { ($0.name.rawName, $0.value) },
            body: body.bytes,
            clientIP: clientIP?.description
        )
        let received = ReceivedRequest(
            provider: providerName,
            account: accountName.truncated(toUTF8Bytes: 128),
            receivedAt: Timestamp.format(epochMilliseconds: Int64(Date().timeIntervalSince1970 * 1000)),
            clientIP: raw.clientIP,
            target: raw.target.truncated(toUTF8Bytes: 2048),
            headers: StoredHeaders.json(request.headers),
            body: raw.body
        )
        let classified = classify(
            raw, received, accountName: accountName, body: body, client: clientIP,
            declaredLength: request.headers.scanned(.contentLength), provider: providerType)
        if case .rejected(_, let rejection) = classified.entry, !classified.exemptFromBudget,
           !admitToStore(client: clientIP) {
            metrics.rejectedUnstored(provider: providerName, reason: rejection.reason, latency: ContinuousClock.now - started)
            return Response(classified.answer)
        }
        let outcome: RecordOutcome
        do {
            outcome = try await store.record(classified.entry)
        } catch {
            return storeUnavailable(error, classified.entry, received, started: started)
        }
        let latency = ContinuousClock.now - started
        metrics.notification(provider: providerName, verdict: outcome.verdict, latency: latency)
        tally.count(outcome.verdict)
        let answered = body.endedEarly != nil && !context.channel.isActive ? nil : classified.answer.status
        log(outcome, of: classified.entry, received, status: answered, latency: latency)
        if classified.answer == providerType.acknowledgement, let acknowledgement = Self.acknowledgements[providerName] {
            return acknowledgement
        }
        return Response(classified.answer)
    }

    // MARK: Steps

    /// The body as it arrived, within the limit.
    struct ReceivedBody {
        var bytes: [UInt8]
        /// Why the body ended before its end (the client went away, or the request deadline
        /// closed the connection); nil when it arrived whole.
        var endedEarly: (any Error)?
    }

    enum BodyRead {
        case received(ReceivedBody)
        /// Past `server.max_body_bytes`: answered 413, nothing stored.
        case tooLarge(Response)
    }

    /// Reads the body up to the limit. Part by part rather than `collect(upTo:)`, so a body that
    /// ends early is still kept as rejected with what did arrive.
    private func readBody(_ request: Request, context: IPNRequestContext, provider: String, account: String) async -> BodyRead {
        let limit = config.server.maxBodyBytes
        if let declared = request.headers.scanned(.contentLength).flatMap({ Int($0) }), declared > limit {
            return .tooLarge(tooLarge(request, context: context, provider: provider, account: account, detail: "Content-Length \(declared)"))
        }
        var body = ReceivedBody(bytes: [])
        do {
            for try await part in request.body {
                guard body.bytes.count + part.readableBytes <= limit else {
                    return .tooLarge(tooLarge(request, context: context, provider: provider, account: account,
                                              detail: "body past \(limit) bytes"))
                }
                body.bytes.append(contentsOf: part.readableBytesView)
            }
        } catch {
            body.endedEarly = error
            logger.notice("request body ended early", metadata: ["provider": "\(provider)", "error": "\(error)"])
        }
        return .received(body)
    }

    /// What a request is: an authentic notification, or a rejected request with its reason;
    /// the answer it gets; whether its client is exempt from the rejected-storage budget.
    struct Classification {
        var entry: InboxEntry
        var answer: ProviderAnswer
        /// The client is inside the account's `allow_ips`: its rejected requests are always stored.
        var exemptFromBudget = false
    }

    /// Resolves the account, checks `allow_ips` and verifies.
    private func classify(
        _ raw: RawRequest, _ received: ReceivedRequest, accountName: String, body: ReceivedBody, client: IPAddress?,
        declaredLength: String?, provider providerType: any NotificationProvider.Type
    ) -> Classification {
        let account = config.account(provider: received.provider, name: accountName)
        // nil: the account takes any client.
        let allowed = account?.allowIPs.map { networks in client.map { networks.containsAddress($0) } ?? false }
        if body.endedEarly != nil {
            let declared = declaredLength.map { " of \($0.prefix(20)) declared" } ?? ""
            return Classification(
                entry: .rejected(received, Rejection(.incompleteBody, "the body ended after \(body.bytes.count) bytes\(declared)")),
                answer: providerType.answer(for: Rejection(.incompleteBody, "")), exemptFromBudget: allowed == true)
        }
        guard let account else {
            return Classification(
                entry: .rejected(received, Rejection(.unknownAccount, "no account \"\(received.account)\" for \(received.provider)")),
                answer: .text(404, "unknown account\n"))
        }
        if allowed == false {
            let rejection = Rejection(.ipNotAllowed, "client \(raw.clientIP ?? "unknown") is not in allow_ips")
            return Classification(entry: .rejected(received, rejection), answer: .text(403, "forbidden\n"))
        }
        do {
            return Classification(entry: .verified(received, try account.provider.verifyRequest(raw)), answer: providerType.acknowledgement)
        } catch {
            return Classification(entry: .rejected(received, error), answer: providerType.answer(for: error), exemptFromBudget: allowed == true)
        }
    }

    /// Counts a rejected request against its client's budget; logs the clients that went past it
    /// in a window this arrival ended. False when it must not be stored.
    private func admitToStore(client: IPAddress?) -> Bool {
        let admission = budget.admit(client, at: RejectedStoreBudget.milliseconds(now()))
        RejectedStoreBudget.log(admission.ended, budget: budget.perWindow, logger: logger)
        return admission.store
    }

    /// 503: the store did not take the notification; the provider retries.
    private func storeUnavailable(_ error: StoreError, _ entry: InboxEntry, _ received: ReceivedRequest, started: ContinuousClock.Instant)
        -> Response
    {
        var verifiedOrderRef: String?
        if case .verified(_, let notification) = entry { verifiedOrderRef = notification.orderRef }
        let latency = ContinuousClock.now - started
        logger.error("notification not stored", metadata: [
            "provider": .string(received.provider), "account": .string(received.account), "error": "\(error)",
            "order_ref": .string(verifiedOrderRef ?? ""), "client_ip": .string(received.clientIP ?? ""), "status": "503",
            "latency_ms": .string(latency.milliseconds),
        ])
        metrics.storeUnavailable(provider: received.provider, latency: latency)
        tally.countStoreFailure()
        var response = Response.plain(503, "store unavailable, retry later\n")
        response.headers[.retryAfter] = "30"
        return response
    }

    /// One line per recorded request; `status` nil when the answer goes nowhere (the request
    /// deadline closed the connection after its own 408, or the client left).
    private func log(_ outcome: RecordOutcome, of entry: InboxEntry, _ received: ReceivedRequest, status: Int?, latency: Duration) {
        // `.string` rather than interpolation: this runs for every notification.
        var metadata: Logger.Metadata = [
            "provider": .string(received.provider),
            "account": .string(received.account),
            "order_ref": .string(outcome.orderRef ?? ""),
            "verdict": .string(outcome.verdict.rawValue),
            "notification_id": .string(String(outcome.notificationID)),
            "client_ip": .string(received.clientIP ?? ""),
            "status": .string(status.map { String($0) } ?? "none"),
            "latency_ms": .string(latency.milliseconds),
        ]
        if case .rejected(_, let rejection) = entry {
            metadata["reason"] = .string(rejection.reason.rawValue)
            metadata["detail"] = .string(rejection.detail)
        } else if let explanation = outcome.explanation {
            metadata["detail"] = .string(explanation)
        }
        if let state = outcome.orderState { metadata["order_state"] = .string(state.rawValue) }
        if let flag = outcome.flag { metadata["flag"] = .string(flag.rawValue) }
        let needsAttention = outcome.verdict == .rejected || outcome.verdict == .mismatch || outcome.flag != nil
        logger.log(level: needsAttention ? .warning : .info, "notification", metadata: metadata)
        for linked in outcome.linked { logLinked(linked, by: outcome, provider: received.provider, account: received.account) }
    }

    /// One line and one count for a notification that waited for its payment and was applied
    /// when it arrived: its order changed with no request of its own to log it.
    private func logLinked(_ linked: LinkedNotification, by payment: RecordOutcome, provider providerName: String, account: String) {
        metrics.linked(provider: providerName, verdict: linked.verdict)
        var metadata: Logger.Metadata = [
            "provider": .string(providerName),
            "account": .string(account),
            "order_ref": .string(payment.orderRef ?? ""),
            "verdict": .string(linked.verdict.rawValue),
            "notification_id": .string(String(linked.notificationID)),
            "linked_by": .string(String(payment.notificationID)),
        ]
        if let explanation = linked.explanation { metadata["detail"] = .string(explanation) }
        if let state = linked.orderState { metadata["order_state"] = .string(state.rawValue) }
        if let flag = linked.flag { metadata["flag"] = .string(flag.rawValue) }
        let needsAttention = linked.verdict == .mismatch || linked.flag != nil
        logger.log(level: needsAttention ? .warning : .info, "waiting notification linked", metadata: metadata)
    }

    /// Each provider's acknowledgement, built once: most answers are one of these, and building
    /// a response (its header fields and body buffer) cost more than looking it up.
    private static let acknowledgements: [String: Response] = Dictionary(
        uniqueKeysWithValues: ProviderRegistry.all.map { ($0.name, Response($0.acknowledgement)) })

    /// Whether `path` is `/ipn/{provider}[/{account}]` of a configured account.
    func servesAccount(atPath path: String) -> Bool {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3 || parts.count == 4, parts[0].isEmpty, parts[1] == "ipn" else { return false }
        let account = parts.count == 4 ? String(parts[3]) : "default"
        return live.current.account(provider: String(parts[2]), name: account) != nil
    }

    /// 413, and the connection ends with it: the body is not read past the limit (product.md
    /// section 3).
    private func tooLarge(_ request: Request, context: IPNRequestContext, provider: String, account: String, detail: String) -> Response {
        metrics.tooLarge(provider: provider)
        let clientIP = clientAddress(of: request, context: context)
        logger.warning("request body too large, not stored; connection closed", metadata: [
            "provider": .string(provider), "account": .string(account.truncated(toUTF8Bytes: 128)),
            "detail": .string(detail), "limit": .stringConvertible(config.server.maxBodyBytes),
            "client_ip": .string(clientIP?.description ?? ""),
            "peer": .string(context.peerAddress?.description ?? "unknown"), "status": "413",
        ])
        return Response.plain(413, "request body too large\n").closingConnection(context.channel)
    }

    /// The client: the peer, or the address a trusted proxy forwarded for.
    private func clientAddress(of request: Request, context: IPNRequestContext) -> IPAddress? {
        ClientAddress.resolve(
            peer: context.peerAddress,
            forwardedFor: request.headers.scannedValues(.xForwardedFor),
            trustedProxies: config.server.trustedProxies
        )
    }
}

extension Response {
    init(_ answer: ProviderAnswer) {
        var headers = HTTPFields()
        headers[.contentType] = answer.contentType
        for (name, value) in answer.headers {
            if let fieldName = HTTPField.Name(name) { headers.append(HTTPField(name: fieldName, value: value)) }
        }
        self.init(
            status: HTTPResponse.Status(code: answer.status),
            headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body))
        )
    }

    static func plain(_ status: Int, _ text: String) -> Response {
        Response(ProviderAnswer.text(status, text))
    }
}

extension HTTPField.Name {
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}

extension Duration {
    /// Milliseconds with two decimals, for logs (integer arithmetic: this runs per request).
    var milliseconds: String {
        let (seconds, attoseconds) = components
        let hundredths = seconds * 100_000 + attoseconds / 10_000_000_000_000
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}

extension HTTPFields {
    /// The values of the fields named `name`, in order, as `self[values: name]` gives them. A
    /// scan: the subscripts build an index of every name on first use, which cost more than
    /// scanning the few fields of a notification (about 4k instructions a request).
    func scannedValues(_ name: HTTPField.Name) -> [String] {
        var values: [String] = []
        for field in self where field.name == name { values.append(field.value) }
        return values
    }

    /// The fields named `name` combined as `self[name]` combines them, or nil when there is none.
    func scanned(_ name: HTTPField.Name) -> String? {
        let values = scannedValues(name)
        guard !values.isEmpty else { return nil }
        return values.joined(separator: name == .cookie ? "; " : ", ")
    }
}
