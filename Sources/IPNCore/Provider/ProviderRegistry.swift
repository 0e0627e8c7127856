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

/// Every provider ipnd speaks. Adding a provider is adding its file and one line here.
public enum ProviderRegistry {
    public static let all: [any NotificationProvider.Type] = [
        Citcon.self,
        IPay88.self,
        Alipay.self,
        Unlimint.self,
        Juspay.self,
    ]

    /// The names, for help texts: `citcon, ipay88, ...`.
    public static var names: String { all.map { $0.name }.joined(separator: ", ") }

    /// The provider type serving route and config name `name`.
    public static func provider(named name: String) -> (any NotificationProvider.Type)? {
        all.first { $0.name == name }
    }
}
