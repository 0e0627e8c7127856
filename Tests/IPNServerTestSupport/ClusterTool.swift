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
import Testing

/// Runs tools/cluster_test.py on the built ipnd with `arguments`, in a database of its own on the
/// server `make test` runs, expects it to pass, and
/// returns the counts of its summary line (`cluster-test: key=value ...`).
func clusterTest(_ arguments: [String], timeout: Double) async throws -> [String: String] {
    let result = try await runPythonTool("cluster_test.py", ["--binary", ipndBinary.path, "--shared-server"] + arguments, timeout: timeout)
    let summary = result.stdout.split(separator: "\n").last { $0.hasPrefix("cluster-test: ") && $0.contains("=") } ?? ""
    #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
    #expect(result.stdout.contains("cluster-test: PASS"), "\(result.stdout)")
    print(summary)
    return Dictionary(summary.dropFirst("cluster-test: ".count).split(separator: " ").compactMap { pair in
        let parts = pair.split(separator: "=", maxSplits: 1)
        return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
    }, uniquingKeysWith: { first, _ in first })
}
