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

/// A Prometheus text exposition (format 0.0.4) in a stable order, with a `# HELP` line for
/// every family.
///
/// swift-prometheus writes families and series in the order of its dictionaries, which differs
/// from one process to the next and can change as series are added, and it writes `# HELP`
/// only for instruments created with a help text (never for those made through swift-metrics).
/// This reads its output back, family by family and series by series, and writes it again:
/// - families sorted by name, each with one `# HELP` line (the text `help` gives) and one
///   `# TYPE` line before its samples;
/// - within a family, series sorted by label set (labels compared in label-name order);
/// - within a histogram series, the `_bucket` lines by ascending `le` (`+Inf` last), then
///   `_sum`, then `_count` (a summary's quantiles likewise).
///
/// Sample lines are copied as they are; only their order changes, so the output is valid when
/// the input is. A sample line whose labels cannot be read is kept too, after its family's
/// readable series, ordered by its text. Comments other than HELP and TYPE are dropped, and so
/// are the input's own HELP lines: `help` is the one source of help texts.
struct PrometheusExposition {
    private var families: [String: Family] = [:]

    /// Reads `text`, the output of a Prometheus registry.
    init(parsing text: String) {
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            if line.first == "#" {
                readComment(line)
            } else {
                readSample(line)
            }
        }
    }

    /// The names of the families read, sorted.
    var familyNames: [String] { families.keys.sorted() }

    /// The exposition in its stable order, `help(name)` giving each family's HELP text.
    func rendered(help: (String) -> String) -> String {
        var output = ""
        for name in familyNames {
            guard let family = families[name] else { continue }
            output += "# HELP \(name) \(Self.escapedHelp(help(name)))\n"
            output += "# TYPE \(name) \(family.type)\n"
            for sample in family.orderedSamples() {
                output += sample.line
                output += "\n"
            }
        }
        return output
    }

    // MARK: Reading

    /// `# TYPE name type` declares a family; other comments (HELP included) are not kept.
    private mutating func readComment(_ line: Substring) {
        let words = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: true)
        guard words.count == 4, words[0] == "#", words[1] == "TYPE" else { return }
        let name = String(words[2])
        let type = String(words[3])
        families[name, default: Family(name: name, type: type)].type = type
    }

    private mutating func readSample(_ line: Substring) {
        let sample = Sample(line)
        let familyName = familyName(of: sample.name)
        families[familyName, default: Family(name: familyName, type: "untyped")].samples.append(sample)
    }

    /// The family a sample named `sampleName` belongs to: its own name, or for a histogram's or
    /// summary's `_bucket`, `_sum` and `_count` lines the name without the suffix. A sample of no
    /// declared family makes an untyped family of its own.
    private func familyName(of sampleName: String) -> String {
        for suffix in Family.seriesSuffixes where sampleName.hasSuffix(suffix) {
            let base = String(sampleName.dropLast(suffix.count))
            if let family = families[base], family.hasSuffixedSamples { return base }
        }
        return sampleName
    }

    /// HELP text escaping of the text format: backslash and line feed.
    private static func escapedHelp(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}

extension PrometheusExposition {
    /// One metric family: its `# TYPE` and its sample lines as read.
    private struct Family {
        static let seriesSuffixes = ["_bucket", "_sum", "_count"]

        let name: String
        var type: String
        var samples: [Sample] = []

        /// Whether the family's samples are named `name_bucket`, `name_sum`, `name_count`.
        var hasSuffixedSamples: Bool { type == "histogram" || type == "summary" }

        /// The label that tells one sample of a series from another, not a series of its own.
        private var boundLabel: String? {
            switch type {
            case "histogram": "le"
            case "summary": "quantile"
            default: nil
            }
        }

        /// The samples grouped by series, series sorted by label set, and within a series the
        /// bounded samples by bound, then `_sum`, then `_count`.
        func orderedSamples() -> [Sample] {
            var series: [SeriesKey: [(index: Int, sample: Sample)]] = [:]
            for (index, sample) in samples.enumerated() {
                series[SeriesKey(sample, excluding: boundLabel), default: []].append((index, sample))
            }
            return series.keys.sorted().flatMap { key in
                (series[key] ?? []).sorted { first, second in
                    let (a, b) = (position(of: first.sample), position(of: second.sample))
                    if a.rank != b.rank { return a.rank < b.rank }
                    if a.bound != b.bound { return a.bound < b.bound }
                    return first.index < second.index
                }.map { $0.sample }
            }
        }

        /// Where a sample goes within its series: its rank (bounded samples, `_sum`, `_count`),
        /// then its bound (`le` or `quantile`; unreadable bounds last).
        private func position(of sample: Sample) -> (rank: Int, bound: Double) {
            guard hasSuffixedSamples else { return (0, 0) }
            let name = sample.name
            if name == "\(self.name)_sum" { return (1, 0) }
            if name == "\(self.name)_count" { return (2, 0) }
            let boundText = sample.labels?.first { $0.name == boundLabel }?.value
            let bound = boundText.flatMap { $0 == "+Inf" ? Double.infinity : Double($0) } ?? .infinity
            return (0, bound.isNaN ? .infinity : bound)
        }
    }

    /// One sample line: its metric name and labels, read only to place the line.
    private struct Sample {
        let line: Substring
        let name: String
        /// Nil when they cannot be read; the line is then kept in its family, ordered by its text.
        let labels: [Label]?

        init(_ line: Substring) {
            self.line = line
            let nameEnd = line.firstIndex { $0 == "{" || $0 == " " || $0 == "\t" } ?? line.endIndex
            name = String(line[..<nameEnd])
            if nameEnd < line.endIndex, line[nameEnd] == "{" {
                labels = Label.parseList(line[line.index(after: nameEnd)...])
            } else {
                labels = []
            }
        }
    }

    /// One `name="value"` pair, the value unescaped.
    private struct Label: Hashable {
        let name: String
        let value: String

        /// The labels from just after `{` to the closing `}`; nil when they are not well formed.
        static func parseList(_ text: Substring) -> [Label]? {
            var labels: [Label] = []
            var rest = text
            while true {
                guard let first = rest.first else { return nil }
                if first == "}" { return labels }
                guard let equals = rest.firstIndex(of: "=") else { return nil }
                let name = String(rest[..<equals])
                rest = rest[rest.index(after: equals)...]
                guard !name.isEmpty, rest.first == "\"" else { return nil }
                rest = rest.dropFirst()
                var value = ""
                var closed = false
                while let character = rest.popFirst() {
                    if character == "\"" {
                        closed = true
                        break
                    }
                    guard character == "\\" else {
                        value.append(character)
                        continue
                    }
                    guard let escaped = rest.popFirst() else { return nil }
                    value.append(escaped == "n" ? "\n" : escaped)
                }
                guard closed else { return nil }
                labels.append(Label(name: name, value: value))
                if rest.first == "," { rest = rest.dropFirst() }
            }
        }
    }

    /// A series within a family: its labels but the bound (`le`, `quantile`), sorted by name.
    private struct SeriesKey: Hashable, Comparable {
        let labels: [Label]
        /// The line itself, for a sample whose labels cannot be read: a series of its own.
        let unreadableLine: String?

        init(_ sample: Sample, excluding boundLabel: String?) {
            if let labels = sample.labels {
                self.labels = labels.filter { $0.name != boundLabel }.sorted { ($0.name, $0.value) < ($1.name, $1.value) }
                unreadableLine = nil
            } else {
                labels = []
                unreadableLine = String(sample.line)
            }
        }

        static func < (lhs: SeriesKey, rhs: SeriesKey) -> Bool {
            switch (lhs.unreadableLine, rhs.unreadableLine) {
            case (nil, nil):
                return lhs.labels.lexicographicallyPrecedes(rhs.labels) { ($0.name, $0.value) < ($1.name, $1.value) }
            case (nil, _): return true
            case (_, nil): return false
            case (let left?, let right?): return left < right
            }
        }
    }
}
