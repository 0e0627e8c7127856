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

import IPNStore
import NIOCore
import PostgresNIO

/// A statement with its parameters, built piece by piece: `bind` appends a value and returns
/// its placeholder (`$1`, `$2`, ...).
struct SQL {
    private(set) var text: String
    private(set) var bindings = PostgresBindings()

    init(_ text: String = "") {
        self.text = text
    }

    /// Appends `value` to the parameters and returns its placeholder.
    mutating func bind(_ value: some PostgresThrowingDynamicTypeEncodable) -> String {
        do {
            try bindings.append(value, context: .default)
        } catch {
            // The encodable types used here do not throw.
            bindings.appendNull()
        }
        return "$\(bindings.count)"
    }

    /// Appends `value`, or SQL NULL, and returns its placeholder.
    mutating func bind(_ value: (some PostgresThrowingDynamicTypeEncodable)?) -> String {
        guard let value else {
            bindings.appendNull()
            return "$\(bindings.count)"
        }
        return bind(value)
    }

    mutating func append(_ text: String) {
        self.text += text
    }

    var query: PostgresQuery { PostgresQuery(unsafeSQL: text, binds: bindings) }
}

/// An array parameter whose elements may be NULL (postgres-nio's arrays take no optionals):
/// the binary array format with a NULL element written as length -1. Used to pass a whole
/// batch's column to `unnest`.
struct NullableArray<Element: PostgresArrayEncodable & PostgresNonThrowingEncodable>: PostgresNonThrowingEncodable {
    let elements: [Element?]

    init(_ elements: [Element?]) {
        self.elements = elements
    }

    static var psqlType: PostgresDataType { Element.psqlArrayType }
    static var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        buffer.writeInteger(elements.isEmpty ? 0 : 1, as: Int32.self)
        buffer.writeInteger(elements.contains { $0 == nil } ? 1 : 0, as: Int32.self)
        buffer.writeInteger(Element.psqlType.rawValue)
        guard !elements.isEmpty else { return }
        buffer.writeInteger(Int32(elements.count), as: Int32.self)
        buffer.writeInteger(1, as: Int32.self)
        for element in elements {
            guard let element else {
                buffer.writeInteger(-1, as: Int32.self)
                continue
            }
            let lengthIndex = buffer.writerIndex
            buffer.writeInteger(0, as: Int32.self)
            let start = buffer.writerIndex
            element.encode(into: &buffer, context: context)
            buffer.setInteger(Int32(buffer.writerIndex - start), at: lengthIndex, as: Int32.self)
        }
    }
}

extension StoreError {
    /// `error` from postgres-nio as a store error, with the server's SQLSTATE when it gave one.
    init(postgres error: any Error, doing action: String, commitInDoubt: Bool = false) {
        if let error = error as? StoreError {
            self = error
            return
        }
        if let error = error as? PSQLError {
            let server = error.serverInfo
            let code = server?[.sqlState] ?? ""
            let message = server?[.message] ?? "\(error.code)"
            self.init(message: "cannot \(action): \(message)\(code.isEmpty ? "" : " (SQLSTATE \(code))")", commitInDoubt: commitInDoubt)
            return
        }
        self.init(message: "cannot \(action): \(error)", commitInDoubt: commitInDoubt)
    }
}

extension PSQLError {
    /// The server's SQLSTATE, when the server reported the error.
    var sqlState: String? { serverInfo?[.sqlState] }

    /// A serialization failure or a deadlock: the transaction is retried.
    var isRetryable: Bool {
        guard let state = sqlState else { return false }
        // 40001 serialization_failure, 40P01 deadlock_detected, 23505 unique_violation (a row
        // another transaction committed first: read again), 55P03 lock_not_available.
        return state == "40001" || state == "40P01" || state == "23505" || state == "55P03"
    }
}
