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

#if canImport(Glibc)
import Glibc
#endif
import IPNServer
import IPNStore
import Logging

/// The log line of each audit record a command writes (`orders expect`, `deliveries retry`...):
/// to the system log (syslog(3), facility authpriv, which journald keeps), since a command's
/// stderr is the person's terminal. The line is the daemon's (`msg=audit` with the record's
/// fields, `detail` escaped as every logged text is).
enum CommandAuditLog {
    static func observe(_ store: any Store) {
        store.auditObserver.observe { record in
            let output = LogOutput.capture()
            AuditLog.log(record, to: Logger(label: "ipnd") { label in LogfmtLogHandler(label: label, level: .info, output: output) })
            for line in output.captured { write(line) }
        }
    }

    private static func write(_ line: String) {
        #if canImport(Glibc)
        let text = line.hasSuffix("\n") ? String(line.dropLast()) : line
        openlog("ipnd", LOG_PID, LOG_AUTHPRIV)
        withVaList([text]) { arguments in
            "%s".withCString { format in vsyslog(LOG_INFO, format, arguments) }
        }
        closelog()
        #endif
    }
}
