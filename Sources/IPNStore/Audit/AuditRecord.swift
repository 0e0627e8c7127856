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

/// What an audit record says was done (README, "The audit trail").
public enum AuditAction: String, Sendable, CaseIterable {
    case expectationSet = "order.expectation_set"
    case deliveryRetry = "delivery.retry"
    case deliveryResume = "delivery.resume"
    case deliveryPing = "delivery.ping"
    case reconcile = "order.reconcile"
    case reverify = "notification.reverify"
    case rawRead = "notification.raw_read"
    case signIn = "console.sign_in"
    case signOut = "console.sign_out"
    case refused = "auth.refused"
    case forbidden = "auth.forbidden"
    case daemonStart = "daemon.start"
    case daemonStop = "daemon.stop"
    case configReload = "config.reload"
}

/// How it ended.
public enum AuditOutcome: String, Sendable, CaseIterable {
    case ok
    case refused
    case error
}

/// A record's `detail`: a small JSON object of scalars (amount and currency set, counts, a
/// refusal's reason), its members in the order they were added. Never a token, a secret, a
/// password or a raw body: callers add only what this type takes, named values they chose.
public struct AuditDetail: Sendable, Equatable {
    public enum Value: Sendable, Equatable {
        case string(String)
        case int(Int64)
        case bool(Bool)
    }

    public private(set) var members: [(key: String, value: Value)]

    public init(_ members: [(key: String, value: Value)] = []) {
        self.members = members
    }

    public static func == (lhs: AuditDetail, rhs: AuditDetail) -> Bool { lhs.text == rhs.text }

    public mutating func add(_ key: String, _ value: String) { members.append((key, .string(value))) }
    public mutating func add(_ key: String, _ value: Int64) { members.append((key, .int(value))) }
    public mutating func add(_ key: String, _ value: Int) { members.append((key, .int(Int64(value)))) }
    public mutating func add(_ key: String, _ value: Bool) { members.append((key, .bool(value))) }

    /// The object's canonical JSON text (`AuditCanonical`), as stored and hashed.
    public var text: String {
        var out: [UInt8] = [UInt8(ascii: "{")]
        for (index, member) in members.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            AuditCanonical.appendString(member.key, to: &out)
            out.append(UInt8(ascii: ":"))
            switch member.value {
            case .string(let text): AuditCanonical.appendString(text, to: &out)
            case .int(let value): out.append(contentsOf: String(value).utf8)
            case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
            }
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}

/// What a caller asks the store to record: who (`actor`, `role`, `via`, `clientIP`), what
/// (`action`, `target`, `detail`) and how it ended. The store adds `id`, `at` and the hashes.
public struct AuditEntry: Sendable, Equatable {
    public var actor: String
    /// nil for `system` and for a request with no identity at all.
    public var role: OpsRole?
    public var via: Principal.Via
    public var action: AuditAction
    /// What it was done to (`unlimint/default/67897`, `notification:42`, `delivery:7,8`); nil when nothing.
    public var target: String?
    public var outcome: AuditOutcome
    /// The client's address; nil for the CLI and the daemon.
    public var clientIP: String?
    public var detail: AuditDetail

    public init(
        actor: String, role: OpsRole?, via: Principal.Via, action: AuditAction, target: String? = nil, outcome: AuditOutcome = .ok,
        clientIP: String? = nil, detail: AuditDetail = AuditDetail()
    ) {
        self.actor = actor
        self.role = role
        self.via = via
        self.action = action
        self.target = target
        self.outcome = outcome
        self.clientIP = clientIP
        self.detail = detail
    }

    /// `principal` did `action`.
    public init(
        _ principal: Principal, clientIP: String?, action: AuditAction, target: String? = nil, outcome: AuditOutcome = .ok,
        detail: AuditDetail = AuditDetail()
    ) {
        self.init(
            actor: principal.name, role: principal.via == .system ? nil : principal.role, via: principal.via, action: action,
            target: target, outcome: outcome, clientIP: clientIP, detail: detail)
    }

    /// The record this entry becomes as record `id`, at `at`, after the record whose hash is `previousHash`.
    public func record(id: Int64, at: String, previousHash: String) -> AuditRecord {
        var record = AuditRecord(
            id: id, at: at, actor: actor, role: role?.rawValue, via: via.rawValue, action: action.rawValue, target: target,
            outcome: outcome.rawValue, clientIP: clientIP, detail: detail.text, prevHash: previousHash, hash: "")
        record.hash = record.computedHash
        return record
    }
}

/// One record of the audit trail as the store keeps it: every field as text, as hashed.
public struct AuditRecord: Sendable, Equatable {
    /// Increasing by one from record to record (retention removes the oldest only).
    public var id: Int64
    /// RFC 3339 UTC with milliseconds.
    public var at: String
    public var actor: String
    public var role: String?
    public var via: String
    public var action: String
    public var target: String?
    public var outcome: String
    public var clientIP: String?
    /// A JSON object text.
    public var detail: String
    /// The hash of the record before it; 64 zeros for the first.
    public var prevHash: String
    /// SHA-256 (lowercase hex) of the canonical encoding (`AuditCanonical`).
    public var hash: String

    public init(
        id: Int64, at: String, actor: String, role: String?, via: String, action: String, target: String?, outcome: String,
        clientIP: String?, detail: String, prevHash: String, hash: String
    ) {
        self.id = id
        self.at = at
        self.actor = actor
        self.role = role
        self.via = via
        self.action = action
        self.target = target
        self.outcome = outcome
        self.clientIP = clientIP
        self.detail = detail
        self.prevHash = prevHash
        self.hash = hash
    }

    /// The hash this record's fields give (equal to `hash` when it is intact).
    public var computedHash: String {
        Hex.encode(Crypto.digest(.sha256, Array(AuditCanonical.encoding(self).utf8)))
    }

    /// The hash of no record: the first record's `prevHash`.
    public static let genesisHash = String(repeating: "0", count: 64)
}

/// Which audit records to list, newest first.
public struct AuditFilter: Sendable, Equatable {
    public var actor: String?
    public var action: String?
    public var outcome: AuditOutcome?
    /// Records at or after this `Timestamp` text.
    public var since: String?
    public var limit: Int
    /// Only records older than this id (the cursor of the previous page).
    public var beforeID: Int64?

    public init(actor: String? = nil, action: String? = nil, outcome: AuditOutcome? = nil, since: String? = nil, limit: Int = 100,
                beforeID: Int64? = nil) {
        self.actor = actor
        self.action = action
        self.outcome = outcome
        self.since = since
        self.limit = limit
        self.beforeID = beforeID
    }
}

/// The canonical encoding an audit record's hash is taken of: the UTF-8 bytes of the JSON array
/// `[prev_hash, id, at, actor, role, via, action, target, outcome, client_ip, detail]`, with no
/// space anywhere, null for an absent value, `id` as a decimal integer and `detail` as a JSON
/// string holding the stored object text. Strings escape `"` and `\` with a backslash,
/// backspace, form feed, line feed, carriage return and tab as `\b \f \n \r \t`, other control
/// characters below U+0020 as `\u00XX` (lowercase hex), and nothing else: exactly what
/// Python's `json.dumps(fields, ensure_ascii=False, separators=(",", ":"))` writes, so the chain
/// can be checked from outside ipnd (README, "Checking the chain from outside").
public enum AuditCanonical {
    public static func encoding(_ record: AuditRecord) -> String {
        var out: [UInt8] = [UInt8(ascii: "[")]
        func field(_ text: String?) {
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            if let text { appendString(text, to: &out) } else { out.append(contentsOf: "null".utf8) }
        }
        field(record.prevHash)
        out.append(UInt8(ascii: ","))
        out.append(contentsOf: String(record.id).utf8)
        for text in [record.at, record.actor, record.role, record.via, record.action, record.target, record.outcome,
                     record.clientIP, record.detail] {
            field(text)
        }
        out.append(UInt8(ascii: "]"))
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `text` as a JSON string with the escapes above.
    public static func appendString(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): out.append(contentsOf: [0x5C, 0x5C])
            case 0x08: out.append(contentsOf: [0x5C, UInt8(ascii: "b")])
            case 0x0C: out.append(contentsOf: [0x5C, UInt8(ascii: "f")])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

extension AuditRecord {
    /// The record as the API, `audit list --format json` and the log show it: `id`, `at`,
    /// `actor`, `role`, `via`, `action`, `target`, `outcome`, `client_ip`, `detail` (the object),
    /// `prev_hash`, `hash`.
    public var json: JSONOut {
        .object([
            ("id", .int(id)),
            ("at", .string(at)),
            ("actor", .string(actor)),
            ("role", .optional(role)),
            ("via", .string(via)),
            ("action", .string(action)),
            ("target", .optional(target)),
            ("outcome", .string(outcome)),
            ("client_ip", .optional(clientIP)),
            ("detail", .verbatim(detail)),
            ("prev_hash", .string(prevHash)),
            ("hash", .string(hash)),
        ])
    }

    /// The csv columns of `audit list`: every field, `detail` as its JSON text.
    public static let columns = ["id", "at", "actor", "role", "via", "action", "target", "outcome", "client_ip", "detail", "prev_hash", "hash"]

    /// The values of `columns`, in order (nil for null).
    public var columnValues: [String?] {
        [String(id), at, actor, role, via, action, target, outcome, clientIP, detail, prevHash, hash]
    }
}
