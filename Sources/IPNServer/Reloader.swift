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
import Logging
import ServiceLifecycle
import UnixSignals

/// Reloads the config on SIGHUP (`systemctl reload ipnd`): tells systemd `RELOADING=1`, reads
/// and validates the file again and, when it is valid, applies it (`Daemon.apply`), then
/// `READY=1`. A config that fails validation changes nothing: the error is logged and counted in
/// `ipnd_config_reload_failures_total`.
struct Reloader: Service {
    let reload: @Sendable () async -> Void

    func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        try await cancelWhenGracefulShutdown {
            for await _ in signals {
                await reload()
            }
        }
    }
}

/// What a reload came to.
public enum ReloadOutcome: Sendable, Equatable {
    /// The new config is in force; `needsRestart` names the keys whose changes wait for one.
    case applied(needsRestart: [String])
    /// The file did not validate: the running config stays.
    case refused(String)
}
