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

extension JSONObject {
    /// The major-unit amount in `field` (a JSON number such as `6.03`, or a string), with its
    /// currency from `currency` or else the sibling `currency` field; nil when absent or null.
    /// `path` names the object in rejection details (`payment_data`, `content.order`).
    public func majorUnitAmount(_ field: String, currency: String? = nil, path: String) throws(Rejection) -> Money? {
        guard let value = self[field], value != .null else { return nil }
        guard let text = value.scalarText else { throw Rejection(.badAmount, "\(path).\(field) is not a number or a string") }
        guard let currency = currency ?? string("currency"), !currency.isEmpty else {
            throw Rejection(.missingField, "\(path).currency is missing beside \(field)")
        }
        do {
            return try Money.parseMajor(text, currency: currency)
        } catch {
            throw error.rejection
        }
    }
}
