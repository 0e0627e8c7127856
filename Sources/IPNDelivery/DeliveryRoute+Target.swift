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
import IPNStore

extension DeliveryRoute {
    /// The route a configured target's filters give: the write path creates a delivery to the
    /// target for each event it matches.
    public init(_ target: DeliveryTarget) {
        self.init(
            name: target.name, types: target.types.map { Set($0.compactMap(EventType.init(rawValue:))) },
            providers: target.providers, accounts: target.accounts)
    }
}
