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
import IPNServer
import IPNStore

/// Who runs a command that changes the store, for its audit record: `cli:LOGIN`, the Unix
/// login that ran it (under sudo, the login that ran sudo: `SUDO_USER`).
enum CommandLineActor {
    static func login(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let sudoUser = environment["SUDO_USER"], !sudoUser.isEmpty { return sudoUser }
        if let name = getlogin().map({ String(cString: $0) }), !name.isEmpty { return name }
        if let entry = getpwuid(getuid()), let name = entry.pointee.pw_name { return String(cString: name) }
        return environment["USER"] ?? "uid\(getuid())"
    }

    static var principal: Principal { .commandLine(login: login()) }

    /// An audit record of `action` by the command's runner.
    static func audit(
        _ action: AuditAction, target: String? = nil, outcome: AuditOutcome = .ok, detail: AuditDetail = AuditDetail()
    ) -> AuditEntry {
        AuditEntry(principal, clientIP: nil, action: action, target: target, outcome: outcome, detail: detail)
    }
}
