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

/// `reconcile:` (product.md section 12): when orders that went quiet are asked about, and how
/// hard the providers are asked. Only accounts with an `inquiry` section are ever asked.
public struct ReconcileSettings: Sendable, Equatable {
    /// Waits after an order's last change, in seconds, strictly increasing; after the last
    /// step the order is asked every `repeatSeconds`.
    public var schedule: [Int] = [600, 1800, 3600, 10_800, 21_600, 43_200, 86_400]
    /// After this long since its last change an order is flagged `unsettled` and no longer asked.
    public var giveUpAfterSeconds = 7 * 86_400
    /// Inquiries on the wire at once, per node.
    public var maxInFlight = 4
    /// At most this many inquiries per provider account and minute.
    public var perAccountPerMinute = 60
    /// How long one inquiry (request and answer) may take.
    public var timeoutSeconds = 10

    /// Once the schedule's steps are spent, an order is asked this often.
    public static let repeatSeconds = 86_400

    public init() {}

    /// One line for `check-config`.
    public var summary: String {
        "schedule \(schedule.map(Duration.text).joined(separator: ", ")) (then every \(Duration.text(Self.repeatSeconds))), "
            + "give_up_after \(Duration.text(giveUpAfterSeconds)), max_in_flight \(maxInFlight), "
            + "per_account_per_minute \(perAccountPerMinute), timeout_seconds \(timeoutSeconds)"
    }

    /// Durations as the config writes them: a positive integer and a unit, `Ns`, `Nm`, `Nh`
    /// or `Nd`.
    public enum Duration {
        /// The longest duration the config takes: ten years.
        public static let maxSeconds = 3650 * 86_400

        private static let units: [(suffix: Character, seconds: Int)] = [("d", 86_400), ("h", 3600), ("m", 60), ("s", 1)]

        /// The seconds `text` says; nil for anything but digits (no sign, no leading zero) and
        /// one unit, zero, or more than `maxSeconds`.
        public static func seconds(_ text: String) -> Int? {
            guard let suffix = text.last, let unit = units.first(where: { $0.suffix == suffix }) else { return nil }
            let digits = text.dropLast()
            guard !digits.isEmpty, digits.count <= 10, digits.first != "0", digits.allSatisfy({ $0.isASCII && $0.isNumber }),
                let count = Int(digits), count <= maxSeconds / unit.seconds
            else { return nil }
            return count * unit.seconds
        }

        /// `seconds` in the largest unit that divides it: 86400 -> `1d`, 5400 -> `90m`.
        public static func text(_ seconds: Int) -> String {
            for unit in units where seconds > 0 && seconds % unit.seconds == 0 {
                return "\(seconds / unit.seconds)\(unit.suffix)"
            }
            return "\(seconds)s"
        }
    }
}
