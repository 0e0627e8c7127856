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

/// `store.postgres` (product.md section 9): the PostgreSQL database several ipnd nodes share.
///
/// The password never shows: `description`, `debugDescription` and the mirror `dump` uses all
/// print `<redacted>` in its place.
public struct PostgresSettings: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// How the connection is encrypted.
    public enum TLSMode: String, Sendable, CaseIterable {
        /// TLS, the server's certificate verified (against `caFile` when set, else the system's
        /// trusted CAs); no connection without it.
        case require
        /// TLS when the server offers it, plain otherwise.
        case prefer
        /// No TLS: only for a unix socket or a loopback address.
        case disable
    }

    /// A host name or IP address, or the absolute path of the directory holding the server's
    /// unix socket (`/run/postgresql`).
    public var host: String
    public var port = 5432
    public var database: String
    public var user: String
    /// The password, resolved from `password` or `password_file`; nil when none is configured
    /// (peer or certificate authentication).
    public var password: String?
    public var tls = TLSMode.require
    /// Absolute path of a PEM file of CAs that verify the server's certificate.
    public var caFile: String?
    /// Connections each node keeps open at most.
    public var poolSize = 16

    public init(host: String, database: String, user: String) {
        self.host = host
        self.database = database
        self.user = user
    }

    /// Whether `host` names a unix socket directory rather than a network host.
    public var isUnixSocket: Bool { host.hasPrefix("/") }

    /// `postgres ipnd@db.internal:5432/ipnd tls=require pool_size=16 password=<redacted>`.
    public var description: String {
        var text = "postgres \(user)@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database) tls=\(tls.rawValue) pool_size=\(poolSize)"
        text += " password=\(password == nil ? "none" : "<redacted>")"
        if let caFile { text += " ca_file=\(caFile)" }
        return text
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: [
            "host": host, "port": port, "database": database, "user": user,
            "password": password == nil ? "none" : "<redacted>", "tls": tls, "caFile": caFile as Any, "poolSize": poolSize,
        ], displayStyle: .struct)
    }
}
