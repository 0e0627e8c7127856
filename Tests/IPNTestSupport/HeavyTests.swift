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

/// Bounds how many heavy tests run at once: the ones that start daemons, provider doubles,
/// receivers, PostgreSQL databases or a browser. Swift Testing starts every test at once; on a
/// two-core machine a hundred daemons and databases starting together made each wait tens of
/// seconds for the CPU, and the tests measured the machine instead of ipnd.
///
/// ```swift
/// @Suite("Push delivery", .heavy)           // each test of the suite takes one place
/// @Test("two nodes...", .heavy(.whole))     // runs alone among the heavy tests
/// ```
///
/// There are `IPND_TEST_HEAVY_WIDTH` places (default 4); a test takes its weight of them for
/// as long as it runs (each case of a parameterized test on its own), and waits, in the order it
/// came, until they are free. Light tests (pure functions, one store file) are not counted.
public struct HeavyTestTrait: TestTrait, SuiteTrait, TestScoping {
    /// How much of the machine a test takes.
    public enum Weight: Sendable {
        /// A daemon or two, a database, a receiver: one place.
        case one
        /// Several daemons, processes under load, a browser: two places.
        case double
        /// Every place: nothing else heavy runs meanwhile (a test that restarts the shared
        /// PostgreSQL server, or measures under load).
        case whole

        var places: Int {
            switch self {
            case .one: 1
            case .double: min(2, HeavyTestGate.shared.width)
            case .whole: HeavyTestGate.shared.width
            }
        }
    }

    public let weight: Weight

    public var isRecursive: Bool { true }

    /// Each test case is gated, never a suite or a test as a whole (which would hold a place
    /// while its cases wait for one); a test of a heavy suite marked heavier itself takes its
    /// own weight, not the suite's.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        guard testCase != nil else { return nil }
        let heavier = test.traits.contains { ($0 as? HeavyTestTrait).map { $0.weight.places > weight.places } ?? false }
        return heavier ? nil : self
    }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let places = weight.places
        // A test of a heavy suite that is marked as heavy itself: one gate, not two (taking
        // places twice could wait for itself).
        if let held = HeavyTestGate.held {
            precondition(held >= places, "\(test.name): gated twice, the heavier inside the lighter")
            try await function()
            return
        }
        await HeavyTestGate.shared.acquire(places)
        do {
            try await HeavyTestGate.$held.withValue(places) { try await function() }
        } catch {
            HeavyTestGate.shared.release(places)
            throw error
        }
        HeavyTestGate.shared.release(places)
    }
}

extension Trait where Self == HeavyTestTrait {
    /// A heavy test, or a suite of them: each takes one place (see `HeavyTestTrait`).
    public static var heavy: Self { HeavyTestTrait(weight: .one) }

    /// A heavy test, or a suite of them, of the given weight.
    public static func heavy(_ weight: HeavyTestTrait.Weight) -> Self { HeavyTestTrait(weight: weight) }
}

/// The places heavy tests share: a counting semaphore, first come first served.
final class HeavyTestGate: @unchecked Sendable {
    /// The places the current test holds.
    @TaskLocal static var held: Int?

    static let shared = HeavyTestGate(
        width: ProcessInfo.processInfo.environment["IPND_TEST_HEAVY_WIDTH"].flatMap(Int.init).map { max(1, $0) } ?? 4)

    let width: Int
    private let lock = NSLock()
    private var free: Int
    private var waiting: [(places: Int, continuation: CheckedContinuation<Void, Never>)] = []

    init(width: Int) {
        self.width = width
        free = width
    }

    func acquire(_ places: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lock.lock()
            if waiting.isEmpty, free >= places {
                free -= places
                lock.unlock()
                continuation.resume()
                return
            }
            waiting.append((places, continuation))
            lock.unlock()
        }
    }

    func release(_ places: Int) {
        lock.lock()
        free += places
        var woken: [CheckedContinuation<Void, Never>] = []
        // First come, first served: a test waiting for every place is not passed over forever.
        while let first = waiting.first, free >= first.places {
            free -= first.places
            woken.append(first.continuation)
            waiting.removeFirst()
        }
        lock.unlock()
        for continuation in woken { continuation.resume() }
    }
}
