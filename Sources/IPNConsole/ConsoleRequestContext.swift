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

import Hummingbird
import IPNCore

/// What the console needs of the ops listener's request context: Hummingbird's, and the
/// client's address for the sign-in log and its slow-down.
public protocol ConsoleRequestContext: RequestContext {
    /// The TCP peer (the client, or the proxy in front of ipnd); nil when unknown.
    var peerAddress: IPAddress? { get }
}
