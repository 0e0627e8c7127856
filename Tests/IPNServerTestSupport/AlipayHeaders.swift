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

/// The headers Alipay signs a notification to `/ipn/alipay` with.
func alipayHeaders(_ body: [UInt8], key: RSAPrivateKey) -> [(String, String)] {
    [
        ("Content-Type", "application/json"), ("client-id", TestDaemon.alipayClientID),
        ("request-time", "2026-11-21T05:00:00Z"),
        ("signature", Alipay.signatureHeader(path: "/ipn/alipay", clientID: TestDaemon.alipayClientID,
                                             requestTime: "2026-11-21T05:00:00Z", body: body, key: key)),
    ]
}
