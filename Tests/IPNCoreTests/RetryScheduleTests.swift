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
import Testing

private let second: Int64 = 1000
private let minute: Int64 = 60 * second
private let hour: Int64 = 60 * minute
/// 2026-11-26T10:00:00Z, the clock every test starts from.
private let start: Int64 = 1_795_687_200_000

@Suite("Delivery retry schedule")
struct RetryScheduleTests {
    /// The wait the schedule picks after a failed attempt.
    private func wait(
        afterAttempt attempts: Int, status: Int? = 500, retryAfter: String? = nil, jitter: Double = 0.5, now: Int64 = start
    ) -> Int64? {
        let decision = RetrySchedule.decide(status: status, retryAfter: retryAfter, attempts: attempts, firstAttemptAt: start, now: now, jitter: jitter)
        guard case .retry(let at) = decision else { return nil }
        return at - now
    }

    @Test("without jitter the waits are 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, then every 2 h")
    func baseSchedule() {
        let waits = (1...10).map { wait(afterAttempt: $0) }
        #expect(waits == [5 * second, 30 * second, 2 * minute, 10 * minute, 30 * minute, hour, 2 * hour, 2 * hour, 2 * hour, 2 * hour])
        #expect(RetrySchedule.baseDelay(afterAttempt: 0) == 5 * second)
        #expect(RetrySchedule.baseDelay(afterAttempt: 1000) == 2 * hour)
    }

    @Test("jitter spans -20 % to +20 %: 0 gives 80 %, values near 1 almost 120 %")
    func jitterExtremes() {
        #expect(wait(afterAttempt: 1, jitter: 0) == 4 * second)
        #expect(wait(afterAttempt: 7, jitter: 0) == 96 * minute)
        let high = wait(afterAttempt: 7, jitter: 1.0.nextDown) ?? 0
        #expect(high > 143 * minute && high <= 144 * minute, "\(high)")
        // Out-of-range inputs are clamped, not trusted.
        #expect(wait(afterAttempt: 1, jitter: -3) == 4 * second)
        #expect(wait(afterAttempt: 1, jitter: 7) == 6 * second)
        #expect(wait(afterAttempt: 1, jitter: .nan) == 5 * second)
    }

    @Test("waits drawn from a random source stay within +-20 % and are not all equal")
    func jitterFromGenerator() {
        var generator = SplitMix64(seed: 42)
        var seen = Set<Int64>()
        for attempts in 1...12 {
            for _ in 0..<50 {
                let decision = RetrySchedule.decide(.noResponse, attempts: attempts, firstAttemptAt: start, now: start, using: &generator)
                guard case .retry(let at) = decision else {
                    Issue.record("\(decision)")
                    return
                }
                let base = RetrySchedule.baseDelay(afterAttempt: attempts)
                #expect(at - start >= base * 8 / 10 && at - start <= base * 12 / 10)
                seen.insert(at - start)
            }
        }
        #expect(seen.count > 100)
    }

    @Test("2xx delivers; 410 pauses the target")
    func finalAnswers() {
        for status in [200, 201, 202, 204, 299] {
            #expect(RetrySchedule.decide(status: status, retryAfter: nil, attempts: 1, firstAttemptAt: start, now: start, jitter: 0.5) == .delivered)
        }
        #expect(RetrySchedule.decide(status: 410, retryAfter: "60", attempts: 3, firstAttemptAt: start, now: start, jitter: 0.5) == .pauseTarget)
        // Even past the three days, the answer itself is what counts.
        let late = start + 80 * hour
        #expect(RetrySchedule.decide(status: 204, retryAfter: nil, attempts: 40, firstAttemptAt: start, now: late, jitter: 0.5) == .delivered)
        #expect(RetrySchedule.decide(status: 410, retryAfter: nil, attempts: 40, firstAttemptAt: start, now: late, jitter: 0.5) == .pauseTarget)
    }

    @Test("redirects, other statuses and no answer at all are retried", arguments: [
        301, 302, 303, 307, 308, 100, 199, 300, 400, 401, 404, 408, 409, 429, 500, 502, 503, 504, 599, nil,
    ] as [Int?])
    func retried(status: Int?) {
        #expect(wait(afterAttempt: 1, status: status) == 5 * second)
    }

    @Test("Retry-After on 429 or 503 lengthens the wait, in delay-seconds or any HTTP-date form")
    func retryAfterLengthens() {
        #expect(wait(afterAttempt: 1, status: 429, retryAfter: "120") == 2 * minute)
        #expect(wait(afterAttempt: 1, status: 503, retryAfter: " 90 ") == 90 * second)
        // 2026-11-26T10:10:00Z, ten minutes after `start`, in RFC 9110's three forms.
        for date in ["Thu, 26 Nov 2026 10:10:00 GMT", "Thursday, 26-Nov-26 10:10:00 GMT", "Thu Nov 26 10:10:00 2026"] {
            #expect(wait(afterAttempt: 1, status: 503, retryAfter: date) == 10 * minute, "\(date)")
        }
    }

    @Test("Retry-After never shortens the wait, counts at most 1 h, and only on 429 or 503")
    func retryAfterBounds() {
        #expect(wait(afterAttempt: 6, status: 429, retryAfter: "10") == hour)
        #expect(wait(afterAttempt: 1, status: 429, retryAfter: "86400") == hour)
        #expect(wait(afterAttempt: 1, status: 429, retryAfter: "99999999999999999999999") == hour)
        #expect(wait(afterAttempt: 1, status: 503, retryAfter: "Sat, 26 Dec 2026 10:00:00 GMT") == hour)
        #expect(wait(afterAttempt: 7, status: 429, retryAfter: "5400") == 2 * hour)
        #expect(wait(afterAttempt: 1, status: 500, retryAfter: "600") == 5 * second)
        #expect(wait(afterAttempt: 1, status: 301, retryAfter: "600") == 5 * second)
        // Unreadable values and dates in the past change nothing.
        for value in ["soon", "-5", "1.5", "", "Thu, 26 Nov 2026 09:00:00 GMT", "Thu, 26 Nov 2026 10:10:00 UTC"] {
            #expect(wait(afterAttempt: 1, status: 429, retryAfter: value) == 5 * second, "\(value)")
        }
        // The jittered own wait still wins when it is longer.
        #expect(wait(afterAttempt: 7, status: 503, retryAfter: "3600", jitter: 0) == 96 * minute)
    }

    @Test("three days after the first attempt the delivery fails; no automatic attempt starts after that")
    func cutoff() {
        let cutoff = start + 72 * hour
        func decide(now: Int64, attempts: Int = 30) -> DeliveryDecision {
            RetrySchedule.decide(status: 500, retryAfter: nil, attempts: attempts, firstAttemptAt: start, now: now, jitter: 0.5)
        }
        #expect(decide(now: start + 60 * hour) == .retry(at: start + 62 * hour))
        // A wait that would end past the cutoff ends at it: the last attempt.
        #expect(decide(now: start + 71 * hour) == .retry(at: cutoff))
        #expect(decide(now: cutoff - 1) == .retry(at: cutoff))
        #expect(decide(now: cutoff) == .failed)
        #expect(decide(now: cutoff + 5 * hour) == .failed)
        #expect(RetrySchedule.decide(.noResponse, attempts: 1, firstAttemptAt: start, now: cutoff, jitter: 0.5) == .failed)
        #expect(RetrySchedule.decide(status: 429, retryAfter: "3600", attempts: 30, firstAttemptAt: start, now: cutoff - minute, jitter: 0.5)
            == .retry(at: cutoff))
    }

    @Test("a target that never answers: 43 attempts over exactly three days, then failed")
    func wholeLife() {
        var now = start
        var attempts = 0
        var times: [Int64] = []
        while true {
            attempts += 1
            times.append(now)
            let decision = RetrySchedule.decide(.noResponse, attempts: attempts, firstAttemptAt: start, now: now, jitter: 0.5)
            if decision == .failed { break }
            guard case .retry(let at) = decision, at > now else {
                Issue.record("attempt \(attempts): \(decision)")
                return
            }
            now = at
        }
        #expect(attempts == 43)
        #expect(times.last == start + 72 * hour)
        #expect(times.dropLast().allSatisfy { $0 < start + 72 * hour })
        #expect(times[6] == start + hour + 42 * minute + 35 * second)
    }
}

@Suite("HTTP-date")
struct HTTPDateTests {
    /// 1994-11-06T08:49:37Z, RFC 9110's example.
    let example: Int64 = 784_111_777_000

    @Test("RFC 9110's example in its three forms")
    func forms() {
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT", now: start) == example)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT", now: start) == example)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994", now: start) == example)
    }

    @Test("an RFC 850 two-digit year more than 50 years ahead of now is in the past century")
    func twoDigitYears() {
        #expect(HTTPDate.parse("Monday, 01-Jan-76 00:00:00 GMT", now: start) == Timestamp.parse("2076-01-01T00:00:00Z"))
        #expect(HTTPDate.parse("Saturday, 01-Jan-77 00:00:00 GMT", now: start) == Timestamp.parse("1977-01-01T00:00:00Z"))
    }

    @Test("anything else is not a date", arguments: [
        "", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 31 Feb 1994 08:49:37 GMT",
        "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 25:49:37 GMT", "Sun, 06 Nov 1994 08:49 GMT", "Xyz, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-1994 08:49:37 GMT", "Sun Nov  6 08:49:37", "1994-11-06T08:49:37Z", "120",
    ])
    func invalid(text: String) {
        #expect(HTTPDate.parse(text, now: start) == nil)
    }
}
