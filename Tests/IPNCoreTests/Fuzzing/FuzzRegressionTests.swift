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

/// The fuzz targets' inputs replayed as tests: every seed, and every input that ever crashed,
/// hung or leaked in a fuzzer (`Fuzz/regressions/TARGET`, kept once the bug was fixed). An input
/// that brings a bug back crashes the test process or trips a harness invariant.
@Suite("Fuzz seeds and regressions replayed (issue 7)")
struct FuzzRegressionTests {
    static let targets: [(name: String, run: @Sendable ([UInt8]) -> Void)] = [
        ("citcon", FuzzHarness.citcon), ("ipay88", FuzzHarness.ipay88), ("alipay", FuzzHarness.alipay),
        ("unlimint", FuzzHarness.unlimint), ("juspay", FuzzHarness.juspay), ("amount", FuzzHarness.amount),
    ]

    @Test("every kept input of every IPNCore fuzz target runs through its harness", arguments: targets.map(\.name))
    func replay(target: String) throws {
        let run = try #require(Self.targets.first { $0.name == target }?.run)
        let inputs = FuzzInputs.files(target: target)
        #expect(!inputs.isEmpty, "no seeds for \(target)")
        for input in inputs { run(input.bytes) }
    }
}

/// The kept fuzz inputs of a target, found from this file's place in the repository.
enum FuzzInputs {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    static func files(target: String) -> [(name: String, bytes: [UInt8])] {
        var inputs: [(name: String, bytes: [UInt8])] = []
        for kind in ["seeds", "regressions"] {
            let directory = fuzzDirectory.appendingPathComponent(kind).appendingPathComponent(target)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            for name in names.sorted() {
                if let data = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path) {
                    inputs.append(("\(kind)/\(name)", [UInt8](data)))
                }
            }
        }
        return inputs
    }
}
