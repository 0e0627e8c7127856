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
import IPNCore
import Testing

/// The field names of product.md section 1, written out from the spec (not from ipnd's code).
enum SpecFields {
    static let order: Set<String> = [
        "provider", "account", "order_ref", "provider_txn_id", "state", "amount_minor", "amount", "currency",
        "refunded_minor", "expected", "flags", "created_at", "updated_at",
    ]
    static let orderDetail: Set<String> = order.union(["transitions", "notifications", "next_inquiry_at", "inquiries"])
    static let transition: Set<String> = ["from", "to", "at", "notification_id"]
    static let notification: Set<String> = [
        "id", "provider", "account", "order_ref", "received_at", "verdict", "reason", "provider_status", "dedup_key",
        "client_ip", "source", "inquiry_id",
    ]
    /// The csv columns of `inquiries list`: an inquiry record's fields, in the order section 12 lists them.
    static let inquiryColumns = [
        "id", "provider", "account", "order_ref", "asked_at", "trigger", "outcome", "http_status", "provider_status",
        "notification_id", "verdict", "error", "duration_ms", "url",
    ]
    /// An inquiry record (section 12).
    static let inquiry: Set<String> = [
        "id", "provider", "account", "order_ref", "asked_at", "trigger", "outcome", "http_status", "provider_status",
        "notification_id", "verdict", "error", "duration_ms", "url",
    ]
    static let expected: Set<String> = ["amount_minor", "amount", "currency"]
    /// The csv columns: the scalar fields, in the order section 1 lists them.
    static let orderColumns = [
        "provider", "account", "order_ref", "provider_txn_id", "state", "amount_minor", "amount", "currency",
        "refunded_minor", "created_at", "updated_at",
    ]
    static let notificationColumns = [
        "id", "provider", "account", "order_ref", "received_at", "verdict", "reason", "provider_status", "dedup_key",
        "client_ip", "source", "inquiry_id",
    ]
}

typealias JSONDict = [String: Any]

/// Parses JSON text with Foundation (an implementation independent of ipnd's writer).
func parseJSONObject(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> JSONDict {
    let value = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
    return try #require(value as? JSONDict, "not a JSON object: \(text)", sourceLocation: sourceLocation)
}

/// JSON lines: one object per non-empty line.
func parseJSONLines(_ text: String) throws -> [JSONDict] {
    try text.split(separator: "\n", omittingEmptySubsequences: true).map { try parseJSONObject(String($0)) }
}

extension JSONDict {
    func string(_ key: String) -> String? { self[key] as? String }
    func int(_ key: String) -> Int? { (self[key] as? NSNumber)?.intValue }
    func isNull(_ key: String) -> Bool { self[key] is NSNull }
    func objects(_ key: String) -> [JSONDict] { (self[key] as? [JSONDict]) ?? [] }
    var keySet: Set<String> { Set(keys) }
}

/// An RFC 4180 reader, written for the tests: quoted fields, doubled quotes, CRLF or LF.
func parseCSV(_ text: String) -> [[String]] {
    var rows: [[String]] = []
    var row: [String] = []
    var field = ""
    var quoted = false
    var chars = Array(text.unicodeScalars)[...]
    while let char = chars.popFirst() {
        if quoted {
            if char == "\"" {
                if chars.first == "\"" {
                    field.unicodeScalars.append("\"")
                    chars.removeFirst()
                } else {
                    quoted = false
                }
            } else {
                field.unicodeScalars.append(char)
            }
            continue
        }
        switch char {
        case "\"": quoted = true
        case ",":
            row.append(field)
            field = ""
        case "\r": break
        case "\n":
            row.append(field)
            rows.append(row)
            row = []
            field = ""
        default: field.unicodeScalars.append(char)
        }
    }
    if !field.isEmpty || !row.isEmpty {
        row.append(field)
        rows.append(row)
    }
    return rows
}

/// One sample of Prometheus text format.
struct PrometheusSample: Equatable {
    let name: String
    let labels: [String: String]
    let value: Double
}

struct PrometheusParseError: Error, CustomStringConvertible {
    let line: String
    let why: String
    var description: String { "\(why): \(line)" }
}

/// A strict reader of the Prometheus text exposition format (version 0.0.4), written for the
/// tests: every sample belongs to a family declared by a `# TYPE` line before it.
func parsePrometheus(_ text: String) throws -> [PrometheusSample] {
    var types: [String: String] = [:]
    var samples: [PrometheusSample] = []
    let nameCharacters = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:")
    for line in text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) {
        if line.hasPrefix("#") {
            let parts = line.split(separator: " ", maxSplits: 3).map(String.init)
            guard parts.count >= 3, parts[0] == "#", ["HELP", "TYPE"].contains(parts[1]) else {
                throw PrometheusParseError(line: line, why: "comment is neither HELP nor TYPE")
            }
            if parts[1] == "TYPE" {
                guard parts.count == 4, ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[3]) else {
                    throw PrometheusParseError(line: line, why: "bad TYPE line")
                }
                guard types[parts[2]] == nil else { throw PrometheusParseError(line: line, why: "family declared twice") }
                types[parts[2]] = parts[3]
            }
            continue
        }
        var rest = line[...]
        let name = String(rest.prefix { $0.unicodeScalars.allSatisfy(nameCharacters.contains) })
        guard !name.isEmpty, !(name.first?.isNumber ?? true) else { throw PrometheusParseError(line: line, why: "bad metric name") }
        rest = rest.dropFirst(name.count)
        var labels: [String: String] = [:]
        if rest.first == "{" {
            rest = rest.dropFirst()
            while rest.first != "}" {
                let labelName = String(rest.prefix { $0 != "=" })
                rest = rest.dropFirst(labelName.count)
                guard !labelName.isEmpty, rest.first == "=", rest.dropFirst().first == "\"" else {
                    throw PrometheusParseError(line: line, why: "bad label")
                }
                rest = rest.dropFirst(2)
                var value = ""
                while let char = rest.first, char != "\"" {
                    rest = rest.dropFirst()
                    if char == "\\" {
                        guard let escaped = rest.popFirst() else { throw PrometheusParseError(line: line, why: "bad escape") }
                        value.append(escaped == "n" ? "\n" : escaped)
                    } else {
                        value.append(char)
                    }
                }
                guard rest.first == "\"" else { throw PrometheusParseError(line: line, why: "unterminated label value") }
                rest = rest.dropFirst()
                labels[labelName] = value
                if rest.first == "," { rest = rest.dropFirst() }
            }
            rest = rest.dropFirst()
        }
        guard rest.first == " " else { throw PrometheusParseError(line: line, why: "no value") }
        let valueText = rest.dropFirst().split(separator: " ").first.map(String.init) ?? ""
        guard let value = Double(valueText) ?? (valueText == "+Inf" ? Double.infinity : nil) else {
            throw PrometheusParseError(line: line, why: "value is not a number")
        }
        let family = types[name] != nil ? name
            : ["_bucket", "_sum", "_count"].compactMap { suffix in
                name.hasSuffix(suffix) ? String(name.dropLast(suffix.count)) : nil
            }.first { types[$0] == "histogram" || types[$0] == "summary" }
        guard let family, types[family] != nil else { throw PrometheusParseError(line: line, why: "sample without a TYPE line") }
        samples.append(PrometheusSample(name: name, labels: labels, value: value))
    }
    return samples
}

extension [PrometheusSample] {
    /// The value of the sample named `name` whose labels include `labels`; nil when absent.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        first { sample in sample.name == name && labels.allSatisfy { key, value in sample.labels[key] == value } }?.value
    }
}
