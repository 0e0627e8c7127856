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


import IPNCore

/// What each provider must see, written out from docs/providers.md (not from ipnd's own constants).
struct ProviderExpectations: Sendable, CustomStringConvertible {
    let name: String
    let paidStatus: String
    let unknownStatus: String
    let ackContentType: String
    let ackBody: String
    let rejectStatus: Int
    let rejectBody: String?
    let amount: Money

    var description: String { name }

    static let all: [ProviderExpectations] = [
        .init(name: "citcon", paidStatus: "success", unknownStatus: "mystery_state", ackContentType: "text/plain", ackBody: "ok",
              rejectStatus: 400, rejectBody: "invalid signature", amount: Money(minor: 1000, currency: "USD")),
        .init(name: "ipay88", paidStatus: "1", unknownStatus: "9", ackContentType: "text/plain", ackBody: "RECEIVEOK",
              rejectStatus: 400, rejectBody: nil, amount: Money(minor: 127_899, currency: "MYR")),
        .init(name: "alipay", paidStatus: "S", unknownStatus: "Q", ackContentType: "application/json",
              ackBody: #"{"result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"}}"#,
              rejectStatus: 400,
              rejectBody: #"{"result":{"resultCode":"INVALID_SIGNATURE","resultStatus":"F","resultMessage":"invalid signature"}}"#,
              amount: Money(minor: 4200, currency: "SGD")),
        .init(name: "unlimint", paidStatus: "COMPLETED", unknownStatus: "MYSTERY_STATE", ackContentType: "text/plain", ackBody: "OK",
              rejectStatus: 400, rejectBody: "invalid signature", amount: Money(minor: 603, currency: "USD")),
        .init(name: "juspay", paidStatus: "CHARGED", unknownStatus: "MYSTERY_STATE", ackContentType: "text/plain", ackBody: "OK",
              rejectStatus: 401, rejectBody: nil, amount: Money(minor: 60000, currency: "INR")),
    ]
}
