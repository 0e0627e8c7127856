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

/// What one attempt to deliver an event to a target got back.
public enum DeliveryAttemptResult: Sendable, Equatable {
    /// The target answered with this HTTP status; `retryAfter` is its `Retry-After` header
    /// value, if it sent one.
    case response(status: Int, retryAfter: String?)
    /// No answer within the timeout, or no HTTP exchange at all: a connection refused or
    /// reset, a name that does not resolve, a failed TLS handshake.
    case noResponse
}

/// What becomes of a delivery after an attempt.
public enum DeliveryDecision: Sendable, Equatable {
    /// A 2xx answer: done.
    case delivered
    /// A 410 answer: the target asked to stop. Its deliveries wait, nothing lost, until
    /// `ipnd deliveries resume NAME`.
    case pauseTarget
    /// Try again at this time (unix milliseconds).
    case retry(at: Int64)
    /// Three days have passed since the first attempt: no more automatic attempts.
    case failed
}

/// The retry policy of product.md section 8, as pure functions of the delivery's history, the
/// current time and a jitter value, so callers inject the clock and the random source.
///
/// Times are unix milliseconds. After a failed attempt number `n` (1 for the first) that ended
/// at `now`:
/// - the base wait is 5 s, 30 s, 2 min, 10 min, 30 min, 1 h for `n` = 1...6, then 2 h;
/// - the wait is the base scaled by a uniform factor in [0.8, 1.2) (+-20 % jitter);
/// - on a 429 or 503 with a `Retry-After` (delay-seconds or an HTTP-date, RFC 9110 section
///   10.2.3), the wait is at least what the target asked for, counting at most 1 h of it: it
///   lengthens the wait, never shortens it;
/// - 2xx is `delivered` and 410 `pauseTarget` whenever they come; anything else is a failed
///   attempt (3xx included: redirects are not followed);
/// - the cutoff is `firstAttemptAt` + 72 h. A failed attempt ending at or after the cutoff
///   makes the delivery `failed`; before it, the next attempt is `now + wait`, but never later
///   than the cutoff itself. So the last automatic attempt starts at the cutoff at the latest, none
///   starts after it, and the delivery is `failed` as soon as three days have passed (an
///   attempt made by hand after that, `ipnd deliveries retry`, that fails is `failed` again at
///   once).
public enum RetrySchedule {
    /// The base waits after attempts 1 to 6, in milliseconds.
    public static let initialDelays: [Int64] = [5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000]
    /// The base wait after attempt 7 and every later one: 2 h.
    public static let steadyDelay: Int64 = 7_200_000
    /// The jitter: the wait varies by up to this fraction either way.
    public static let jitterFraction = 0.2
    /// The most of a `Retry-After` that is honoured: 1 h.
    public static let retryAfterCap: Int64 = 3_600_000
    /// How long after its first attempt a delivery keeps being retried: 72 h.
    public static let retryWindow: Int64 = 72 * 3_600_000

    /// The decision after an attempt.
    ///
    /// - Parameters:
    ///   - result: what the attempt got back.
    ///   - attempts: how many attempts have been made, this one included (1 after the first).
    ///   - firstAttemptAt: when the first attempt was made.
    ///   - now: when this attempt ended.
    ///   - jitter: a uniform random value in 0..<1 (values outside are clamped); 0.5 gives the
    ///     base wait exactly.
    ///   - delayScale: shrinks (or stretches) the schedule's own waits, not a `Retry-After` nor
    ///     the three days: for drills and tests that cannot wait minutes (`IPND_DELIVERY_RETRY_SCALE`).
    public static func decide(
        _ result: DeliveryAttemptResult, attempts: Int, firstAttemptAt: Int64, now: Int64, jitter: Double, delayScale: Double = 1
    ) -> DeliveryDecision {
        var requested: Int64?
        switch result {
        case .response(let status, let retryAfter):
            if (200...299).contains(status) { return .delivered }
            if status == 410 { return .pauseTarget }
            if status == 429 || status == 503, let retryAfter {
                requested = retryAfterDelay(retryAfter, now: now)
            }
        case .noResponse:
            break
        }
        let cutoff = firstAttemptAt.addingClamped(retryWindow)
        guard now < cutoff else { return .failed }
        var wait = jittered(baseDelay(afterAttempt: attempts), jitter: jitter)
        if delayScale != 1, delayScale.isFinite, delayScale >= 0 { wait = Int64((Double(wait) * delayScale).rounded()) }
        if let requested { wait = max(wait, min(requested, retryAfterCap)) }
        return .retry(at: min(now.addingClamped(wait), cutoff))
    }

    /// The decision after an attempt, `status` nil meaning no HTTP answer (timeout, connection
    /// or TLS error). See `decide(_:attempts:firstAttemptAt:now:jitter:)`.
    public static func decide(status: Int?, retryAfter: String?, attempts: Int, firstAttemptAt: Int64, now: Int64, jitter: Double) -> DeliveryDecision {
        let result: DeliveryAttemptResult = status.map { .response(status: $0, retryAfter: retryAfter) } ?? .noResponse
        return decide(result, attempts: attempts, firstAttemptAt: firstAttemptAt, now: now, jitter: jitter)
    }

    /// The decision after an attempt, drawing the jitter from `generator`.
    public static func decide(
        _ result: DeliveryAttemptResult, attempts: Int, firstAttemptAt: Int64, now: Int64,
        using generator: inout some RandomNumberGenerator
    ) -> DeliveryDecision {
        decide(result, attempts: attempts, firstAttemptAt: firstAttemptAt, now: now, jitter: Double.random(in: 0..<1, using: &generator))
    }

    /// The base wait after attempt number `attempts` (1 for the first; smaller counts as 1).
    public static func baseDelay(afterAttempt attempts: Int) -> Int64 {
        let index = max(attempts, 1) - 1
        return index < initialDelays.count ? initialDelays[index] : steadyDelay
    }

    /// `base` scaled by 0.8 + 0.4 * `jitter`, rounded to the millisecond: `jitter` 0 gives 80 %,
    /// 0.5 the base itself, values near 1 almost 120 %.
    public static func jittered(_ base: Int64, jitter: Double) -> Int64 {
        let unit = jitter.isNaN ? 0.5 : min(max(jitter, 0), 1.0.nextDown)
        let factor = 1 - jitterFraction + 2 * jitterFraction * unit
        return Int64((Double(base) * factor).rounded())
    }

    /// How long a `Retry-After` value asks to wait from `now`, in milliseconds (0 for a date in
    /// the past), uncapped; nil when it is neither delay-seconds nor an HTTP-date.
    public static func retryAfterDelay(_ value: String, now: Int64) -> Int64? {
        let text = value.trimmingSpacesAndTabs()
        guard !text.isEmpty else { return nil }
        if text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // delay-seconds; absurdly long values saturate (the cap applies anyway).
            var seconds: Int64 = 0
            for digit in text.utf8 {
                let (times10, overflow1) = seconds.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times10.addingReportingOverflow(Int64(digit - UInt8(ascii: "0")))
                if overflow1 || overflow2 { return Int64.max }
                seconds = sum
            }
            let (millis, overflow) = seconds.multipliedReportingOverflow(by: 1000)
            return overflow ? Int64.max : millis
        }
        guard let date = HTTPDate.parse(text, now: now) else { return nil }
        return max(0, date - now)
    }
}

extension Int64 {
    /// `self + other`, stopping at `Int64.max` / `Int64.min` instead of trapping.
    fileprivate func addingClamped(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}

extension String {
    fileprivate func trimmingSpacesAndTabs() -> String {
        var view = Substring(self)
        while let first = view.first, first == " " || first == "\t" { view.removeFirst() }
        while let last = view.last, last == " " || last == "\t" { view.removeLast() }
        return String(view)
    }
}
