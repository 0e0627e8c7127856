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

extension TestDaemon {
    /// Edits the config file in place (kept 0600), as an operator does before a reload.
    func editConfig(_ edit: (String) -> String) throws {
        let text = try String(contentsOfFile: configPath, encoding: .utf8)
        let edited = edit(text)
        #expect(edited != text, "the edit changed nothing")
        try Data(edited.utf8).write(to: URL(fileURLWithPath: configPath))
        chmod(configPath, 0o600)
    }

    /// Writes the test daemon's config as it was written at start: owner-only (it holds secrets).
    static func writeConfig(_ yaml: String, to path: String) throws {
        try yaml.write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
    }
}
