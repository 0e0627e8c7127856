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
}
