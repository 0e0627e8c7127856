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

/// Text shown to people (log lines, the CLI's tables) with the characters that hide or
/// rearrange what is around them written as `\u{...}`: an unauthenticated request, or a
/// provider, chooses some of the text ipnd shows.
public enum VisibleText {
    /// Controls (C0, DEL, C1), format characters (bidirectional overrides and isolates,
    /// zero-width characters) and the line and paragraph separators.
    public static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: true
        default: false
        }
    }

    /// How a hidden character is written: `\u{202e}`.
    public static func escape(_ scalar: Unicode.Scalar) -> String {
        "\\u{\(String(scalar.value, radix: 16))}"
    }

    /// `text` with each hidden character escaped; `text` itself when it has none.
    public static func escaping(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isHidden) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if isHidden(scalar) { out += escape(scalar) } else { out.unicodeScalars.append(scalar) }
        }
        return out
    }
}
