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
import IPNConfig
import IPNCore
import IPNDelivery
import IPNStore
import Logging

extension Daemon {
    /// Reads the config file again and puts what it can in force without a restart (SIGHUP,
    /// `systemctl reload ipnd`): provider accounts and secrets, `allow_ips`, trusted proxies,
    /// the body limit, ops tokens, delivery targets, reconciliation, the rejected-request budget
    /// and retention.
    /// A request in flight finishes with the config it started with; no connection is dropped.
    /// Changed listeners or store settings are logged as waiting for a restart. A config that
    /// fails validation changes nothing: the error is logged and counted
    /// (`ipnd_config_reload_failures_total`). systemd hears `RELOADING=1` first, `READY=1` after.
    @discardableResult
    public func reload() async -> ReloadOutcome {
        await reloading.withLock {
            notifier.notify("RELOADING=1\nMONOTONIC_USEC=\(Self.monotonicMicroseconds())\nSTATUS=reloading \(live.current.path)")
            let outcome = await reloadNow()
            notifier.notify("READY=1\nSTATUS=\(Self.status(after: outcome, path: live.current.path))")
            return outcome
        }
    }

    private func reloadNow() async -> ReloadOutcome {
        let old = live.current
        let loaded: IPNDConfig
        do {
            loaded = try ConfigLoader.load(path: old.path, environment: configEnvironment)
        } catch {
            metrics.configReloadFailed()
            logger.error("config reload refused: the running config stays", metadata: [
                "config": .string(old.path), "error": .string(error.description),
            ])
            return .refused(error.description)
        }
        let needsRestart = ReloadScope.needsRestart(from: old, to: loaded)
        let config = ReloadScope.inForce(from: old, to: loaded)
        if let reloadables = state.withLock({ $0.reloadables }) {
            do {
                try await apply(config, to: reloadables)
            } catch {
                metrics.configReloadFailed()
                logger.error("config reload not applied: the running config stays", metadata: [
                    "config": .string(old.path), "error": "\(error)",
                ])
                return .refused("\(error)")
            }
        }
        live.replace(config)
        // The API's bearer check and the console's sign-in share these; a console session made
        // with a token that is no longer listed ends at its next request.
        opsCredentials.replace(digests: config.ops.tokenDigests)
        if !needsRestart.isEmpty {
            logger.warning("config reloaded; these changes need a restart to take effect", metadata: [
                "config": .string(old.path), "keys": .string(needsRestart.joined(separator: ",")),
            ])
        }
        logger.info("config reloaded", metadata: [
            "config": .string(old.path), "accounts": "\(config.accounts.count)", "delivery_targets": "\(config.deliveries.count)",
            "ops_tokens": "\(config.ops.tokenDigests.count)",
        ])
        return .applied(needsRestart: needsRestart)
    }

    /// Hands the new settings to the parts that keep their own. Delivery targets first: a
    /// target that cannot be set up (its CA file) refuses the reload before anything changed.
    private func apply(_ config: IPNDConfig, to parts: Reloadables) async throws {
        let targets = config.deliveries.map(\.name)
        try await store.registerDeliveryTargets(targets)
        for target in targets { parts.deliveryMetrics.register(target: target) }
        try await parts.deliveries.update(targets: config.deliveries)
        store.setDeliveryRoutes(config.deliveries.map(DeliveryRoute.init))
        await parts.reconciler.update(settings: config.reconcilerSettings, accounts: config.inquiryAccounts)
        parts.budget.setPerWindow(config.server.rejectedStorePerMinute)
        parts.retention.setRetention(config.store.retention)
    }

    private static func status(after outcome: ReloadOutcome, path: String) -> String {
        switch outcome {
        case .applied(let keys) where keys.isEmpty: "serving; config reloaded"
        case .applied(let keys): "serving; config reloaded, restart to apply \(keys.joined(separator: ", "))"
        case .refused: "serving; config reload refused (see the log), the previous config stays"
        }
    }

    /// `CLOCK_MONOTONIC` in microseconds, as `RELOADING=1` carries it (`Type=notify-reload`).
    private static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
    }
}
