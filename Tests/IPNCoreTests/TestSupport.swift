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
import IPNCore

/// Byte-exact fixtures copied from the shared vectors (tests never read ../shared).
enum Fixture {
    static func bytes(_ name: String) -> [UInt8] {
        guard let url = Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures"),
            let data = try? Data(contentsOf: url)
        else { fatalError("missing fixture \(name)") }
        return [UInt8](data)
    }

    static func text(_ name: String) -> String {
        String(decoding: bytes(name), as: UTF8.self)
    }
}

extension RandomNumberGenerator {
    /// Random printable ASCII (no quotes or backslashes), for secrets and field values.
    mutating func printable(length: Int) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:~!@$^*()[]{}|;,<>?/ ")
        return String((0..<length).map { _ in alphabet[Int(next() % UInt64(alphabet.count))] })
    }

    /// `bytes` with the byte at a random index changed to a different value.
    mutating func mutatingOneByte(_ bytes: [UInt8]) -> (mutated: [UInt8], index: Int) {
        var copy = bytes
        let index = Int(next() % UInt64(bytes.count))
        let delta = UInt8(1 + next() % 255)
        copy[index] = copy[index] &+ delta
        return (copy, index)
    }
}
