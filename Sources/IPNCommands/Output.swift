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

import IPNStore
import Foundation
import IPNCore
import ArgumentParser
import IPNServer

/// `--format` of the list commands.
enum ListFormat: String, ExpressibleByArgument, CaseIterable {
    /// Aligned columns for a terminal.
    case table
    /// One JSON object per line.
    case json
    /// A header row, then one row per record (RFC 4180 quoting).
    case csv
}

/// `--format` of `orders show`.
enum ShowFormat: String, ExpressibleByArgument, CaseIterable {
    case table
    case json
}

/// Columns aligned for a terminal: two spaces between columns, no trailing blanks. Characters
/// that would hide or rearrange text on the terminal are shown escaped, as in the log.
struct TextTable {
    var headers: [String]
    var rows: [[String]] = []

    var text: String {
        let headers = headers.map(VisibleText.escaping)
        let rows = rows.map { $0.map(VisibleText.escaping) }
        var widths = headers.map(\.count)
        for row in rows {
            for (index, cell) in row.enumerated() where index < widths.count {
                widths[index] = max(widths[index], cell.count)
            }
        }
        func line(_ cells: [String]) -> String {
            var out = ""
            for (index, cell) in cells.enumerated() {
                if index > 0 { out += "  " }
                out += cell
                if index < cells.count - 1 { out += String(repeating: " ", count: widths[index] - cell.count) }
            }
            return out
        }
        return ([line(headers)] + rows.map(line)).joined(separator: "\n")
    }
}

/// Comma-separated values with a header row; fields holding a comma, a double quote, CR or LF
/// are quoted and their quotes doubled (RFC 4180). Rows end with LF.
enum CSV {
    static func text(columns: [String], objects: [JSONOut]) -> String {
        var lines = [columns.map(field).joined(separator: ",")]
        for object in objects {
            lines.append(columns.map { field(object[$0]?.scalarText ?? "") }.joined(separator: ","))
        }
        return lines.joined(separator: "\n")
    }

    static func field(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }) else {
            return text
        }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

/// JSON lines: one compact object per line.
enum JSONLines {
    static func text(_ objects: [JSONOut]) -> String {
        objects.map(\.text).joined(separator: "\n")
    }
}
