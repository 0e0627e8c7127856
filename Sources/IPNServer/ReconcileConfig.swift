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
import IPNReconcile
import IPNStore

extension IPNDConfig {
    /// The `reconcile` section as the reconciler takes it.
    public var reconcilerSettings: Reconciler.Settings {
        Reconciler.Settings(
            schedule: InquirySchedule(
                stepsMillis: reconcile.schedule.map { Int64($0) * 1000 }, giveUpAfterMillis: Int64(reconcile.giveUpAfterSeconds) * 1000,
                repeatMillis: Int64(ReconcileSettings.repeatSeconds) * 1000),
            maxInFlight: reconcile.maxInFlight, perAccountPerMinute: reconcile.perAccountPerMinute,
            timeoutSeconds: reconcile.timeoutSeconds)
    }

    /// The accounts with an `inquiry` section, by name (known whichever way the config was loaded).
    public var askedScopes: [Scope] {
        accountNames.filter(\.asked).map { Scope(provider: $0.provider, account: $0.account) }
    }

    /// The accounts with an `inquiry` section: the ones reconciliation asks about.
    public var inquiryAccounts: [Reconciler.Account] {
        accounts.compactMap { account in
            account.provider.inquiry.map {
                Reconciler.Account(scope: Scope(provider: account.providerName, account: account.name), inquiry: $0)
            }
        }
    }
}
