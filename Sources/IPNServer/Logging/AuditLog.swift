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
import Logging

/// Each audit record as a log line (`msg=audit`), for journald and a SIEM: its fields, `detail`
/// as its JSON text, escaped as every logged text is.
public enum AuditLog {
    public static func log(_ record: AuditRecord, to logger: Logger) {
        logger.info("audit", metadata: [
            "id": "\(record.id)", "at": .string(record.at), "actor": .string(record.actor), "role": .string(record.role ?? ""),
            "via": .string(record.via), "action": .string(record.action), "target": .string(record.target ?? ""),
            "outcome": .string(record.outcome), "client_ip": .string(record.clientIP ?? ""), "detail": .string(record.detail),
            "prev_hash": .string(record.prevHash), "hash": .string(record.hash),
        ])
    }
}
