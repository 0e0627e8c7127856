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

import IPNConfig
import IPNCore
import IPNStore

/// The filters of a list page as typed into its form (`provider`, `account`, `state`,
/// `verdict`, `since`, `target`) and its page (`before`: the id the page starts below), checked
/// the way the CLI checks its flags.
struct ListFilters: Sendable {
    let providerText: String?
    let account: String?
    let stateText: String?
    let verdictText: String?
    let sinceText: String?
    let targetText: String?
    let beforeText: String?

    static var providerNames: [String] { ProviderRegistry.all.map { $0.name } }

    init(_ query: FormQuery) {
        func value(_ name: String) -> String? {
            guard let value = query[name], !value.isEmpty else { return nil }
            return value
        }
        providerText = value("provider")
        account = value("account")
        stateText = value("state")
        verdictText = value("verdict")
        sinceText = value("since")
        targetText = value("target")
        beforeText = value("before")
    }

    /// The account filter, when `config` has such an account (for the provider chosen, if
    /// any). An account no configured provider has would make the list read the whole table
    /// for nothing: it is refused, naming the CLI, which lists what the store still holds.
    func account(in names: [AccountName], provider: String?) throws(FilterError) -> String? {
        guard let account else { return nil }
        guard names.contains(where: { $0.account == account && (provider == nil || $0.provider == provider) }) else {
            throw FilterError("no account \"\(account.prefix(64))\" is configured\(provider.map { " for \($0)" } ?? ""); "
                + "`ipnd orders list --account` and `ipnd notifications list --account` list what the store holds for any account")
        }
        return account
    }

    func provider() throws(FilterError) -> String? {
        guard let providerText else { return nil }
        guard ProviderRegistry.provider(named: providerText) != nil else {
            throw FilterError("provider \"\(providerText.prefix(64))\" is not one of \(ProviderRegistry.names)")
        }
        return providerText
    }

    func state() throws(FilterError) -> OrderState? {
        guard let stateText else { return nil }
        guard let state = OrderState(rawValue: stateText) else {
            throw FilterError("state \"\(stateText.prefix(64))\" is not one of \(OrderState.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return state
    }

    func verdict() throws(FilterError) -> Verdict? {
        guard let verdictText else { return nil }
        guard let verdict = Verdict(rawValue: verdictText) else {
            throw FilterError("verdict \"\(verdictText.prefix(64))\" is not one of \(Verdict.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return verdict
    }

    func deliveryState() throws(FilterError) -> DeliveryState? {
        guard let stateText else { return nil }
        guard let state = DeliveryState(rawValue: stateText) else {
            throw FilterError("state \"\(stateText.prefix(64))\" is not one of \(DeliveryState.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return state
    }

    /// The `since` time as the stored timestamp text it compares with.
    func since() throws(FilterError) -> String? {
        guard let sinceText else { return nil }
        guard let millis = Timestamp.parse(sinceText) else {
            throw FilterError("since \"\(sinceText.prefix(64))\" is not an ISO 8601 time (2026-11-21, 2026-11-21T10:00:00Z, 2026-11-21T18:00:00+08:00)")
        }
        return Timestamp.format(epochMilliseconds: millis)
    }

    func before() throws(FilterError) -> Int64? {
        guard let beforeText else { return nil }
        guard let id = Int64(beforeText), id > 0 else { throw FilterError("before \"\(beforeText.prefix(64))\" is not a row id") }
        return id
    }

    /// The list at `path` with these filters, from the page below `before` (the first page
    /// when nil).
    func link(_ path: String, before: Int64? = nil) -> String {
        URLText.link(path, [
            ("provider", providerText), ("account", account), ("state", stateText), ("verdict", verdictText),
            ("since", sinceText), ("target", targetText), ("before", before.map { "\($0)" }),
        ])
    }
}

/// A filter value that cannot be used; the message says what would be.
struct FilterError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
