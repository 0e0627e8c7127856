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

/// What this build of ipnd is.
public enum BuildInfo {
    /// The version: the one place it is written. `ipnd --version` prints it, `/metrics` labels
    /// `ipnd_build_info` with it, deliveries send it in their User-Agent, and `make deb` names
    /// the package after it (scripts/build-deb.sh asks the binary it packages).
    public static let version = "0.1.0"
}
