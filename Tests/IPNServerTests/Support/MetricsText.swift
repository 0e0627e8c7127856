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

/// Reading a Prometheus text exposition (`GET /metrics`) in tests.
enum MetricsText {
    /// The value of the series of `family` with exactly `labels` (in any order; none for a
    /// series without labels), or nil when the scrape has no such series.
    static func sample(_ scrape: String, _ family: String, _ labels: [String: String] = [:]) -> Double? {
        for line in scrape.split(separator: "\n") {
            let rest: Substring
            var found: [String: String] = [:]
            if line.hasPrefix(family + "{") {
                guard let close = line.firstIndex(of: "}") else { continue }
                let inside = line[line.index(line.startIndex, offsetBy: family.count + 1)..<close]
                for pair in inside.split(separator: ",") {
                    let parts = pair.split(separator: "=", maxSplits: 1)
                    guard parts.count == 2 else { continue }
                    found[String(parts[0])] = String(parts[1]).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                }
                rest = line[line.index(after: close)...]
            } else if line.hasPrefix(family + " ") {
                rest = line.dropFirst(family.count)
            } else {
                continue
            }
            if found == labels { return Double(rest.trimmingCharacters(in: .whitespaces)) }
        }
        return nil
    }
}
