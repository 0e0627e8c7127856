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

import IPNCore
import Yams

/// The YAML document reduced to what the config uses: scalars keep their text exactly,
/// mappings keep their key order, and every node remembers its line for messages.
indirect enum ConfigNode {
    case scalar(String, line: Int?)
    case null(line: Int?)
    case sequence([ConfigNode], line: Int?)
    case mapping([(key: String, value: ConfigNode)], line: Int?)

    static func parse(yaml: String, path: String) throws(ConfigError) -> ConfigNode {
        let node: Node?
        do {
            // The basic resolver tags nothing: the validator reads every scalar as text, and
            // Yams' default resolver compiles ICU regular expressions on first use, which
            // costs start-up time and about 0.5 MB of the daemon's resident memory.
            node = try Yams.compose(yaml: yaml, .basic)
        } catch {
            throw ConfigError(key: nil, "\(path) is not valid YAML: \(describe(error))")
        }
        guard let node else { throw ConfigError(key: nil, "\(path) is empty") }
        return try convert(node, key: "")
    }

    /// Where and what the YAML problem is, without the text around it: Yams' own descriptions
    /// quote the offending line or the whole mapping, which may hold secrets.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? YamlError else { return "the file could not be read as YAML" }
        func position(_ mark: Mark) -> String { "line \(mark.line), column \(mark.column)" }
        func circumstance(_ context: YamlError.Context?) -> String {
            context.map { "\($0.text) at \(position($0.mark)): " } ?? ""
        }
        switch error {
        case .scanner(let context, let problem, let mark, _),
             .parser(let context, let problem, let mark, _),
             .composer(let context, let problem, let mark, _):
            return "\(position(mark)): \(circumstance(context))\(problem)"
        case .reader(let problem, let offset, _, _):
            return "\(problem)\(offset.map { " at byte \($0)" } ?? "")"
        case .duplicatedKeysInMapping(let duplicates, let context):
            let keys = duplicates.sorted().map { "\"\($0)\"" }.joined(separator: ", ")
            return "duplicated key \(keys) in the mapping at \(position(context.mark))"
        case .dataCouldNotBeDecoded:
            return "the file is not UTF-8 text"
        default:
            return "the file could not be read as YAML"
        }
    }

    private static func convert(_ node: Node, key: String) throws(ConfigError) -> ConfigNode {
        let line = node.mark?.line
        switch node {
        case .scalar(let scalar):
            if node.null != nil, scalar.style == .plain { return .null(line: line) }
            return .scalar(scalar.string, line: line)
        case .sequence(let sequence):
            var items: [ConfigNode] = []
            for (index, item) in sequence.enumerated() {
                items.append(try convert(item, key: "\(key)[\(index)]"))
            }
            return .sequence(items, line: line)
        case .mapping(let mapping):
            var pairs: [(key: String, value: ConfigNode)] = []
            for (keyNode, value) in mapping {
                guard let name = keyNode.scalar?.string else {
                    throw ConfigError(key: key.isEmpty ? nil : key, "mapping keys must be plain strings")
                }
                let childKey = key.isEmpty ? name : "\(key).\(name)"
                pairs.append((name, try convert(value, key: childKey)))
            }
            return .mapping(pairs, line: line)
        case .alias:
            throw ConfigError(key: key.isEmpty ? nil : key, "YAML aliases are not supported")
        }
    }

    /// `[]`.
    var isEmptyList: Bool {
        if case .sequence(let items, _) = self { return items.isEmpty }
        return false
    }

    var kindName: String {
        switch self {
        case .scalar: "a value"
        case .null: "empty"
        case .sequence(let items, _): items.isEmpty ? "an empty list" : "a list"
        case .mapping: "a mapping"
        }
    }

    subscript(key: String) -> ConfigNode? {
        guard case .mapping(let pairs, _) = self else { return nil }
        return pairs.first { $0.key == key }?.value
    }

    /// Sets `key` in a mapping node (adding it when absent).
    mutating func set(_ key: String, to value: ConfigNode) {
        guard case .mapping(var pairs, let line) = self else { return }
        if let index = pairs.firstIndex(where: { $0.key == key }) {
            pairs[index].value = value
        } else {
            pairs.append((key, value))
        }
        self = .mapping(pairs, line: line)
    }
}
