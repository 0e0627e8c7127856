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

/// How many of something are under way right now.
public final class InFlightCount: Sendable {
    private let value = Locked(0)

    public init() {}

    public var count: Int { value.withLock { $0 } }

    public func enter() { value.withLock { $0 += 1 } }

    public func leave() { value.withLock { $0 -= 1 } }
}
