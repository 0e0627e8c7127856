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

import Hummingbird
import IPNCore
import IPNStore

extension OpsConsole {
    /// `GET /`: the last 24 hours' notifications by provider, verdict, reason and hour, orders
    /// by state, open amount_mismatch flags, reconciliation's backlog and each delivery
    /// target's standing.
    func overview(_ request: Request) async -> Response {
        await page(request) { () async throws(StoreError) -> Response in
            let window = OverviewWindow(nowMilliseconds: Self.nowMilliseconds())
            let counts = try await store.notificationCounts(since: window.start)
            let states = try await store.orderCountsByState()
            let flagged = try await store.flaggedOrders("amount_mismatch", limit: OverviewPage.mismatchesShown)
            let targets = try await store.deliveryTargets()
            let scopes = asking.scopes
            let backlog = try await store.inquiryBacklog(scopes: scopes, now: Timestamp.format(epochMilliseconds: Self.nowMilliseconds()))
            var model = OverviewPage(window: window, counts: counts, states: states, flagged: flagged, targets: targets)
            model.awaitingInquiry = backlog.awaiting
            model.oldestAwaiting = backlog.oldestDueAt
            model.unsettledTotal = backlog.unsettled
            model.reconciling = !scopes.isEmpty
            return render("overview", title: "Overview", current: "/", request: request, page: model)
        }
    }
}

/// The 24 hourly buckets the overview shows: the current hour and the 23 before it.
struct OverviewWindow: Sendable {
    static let hours = 24
    /// The first hour's first millisecond (`Timestamp` text).
    let start: String
    /// Each hour's first millisecond, oldest first.
    let hourStarts: [String]

    init(nowMilliseconds: Int64) {
        let hourMilliseconds: Int64 = 3_600_000
        let current = nowMilliseconds - ((nowMilliseconds % hourMilliseconds) + hourMilliseconds) % hourMilliseconds
        hourStarts = (0..<Self.hours).reversed().map {
            Timestamp.format(epochMilliseconds: current - Int64($0) * hourMilliseconds)
        }
        start = hourStarts[0]
    }
}

/// The overview's values.
struct OverviewPage: Sendable {
    static let mismatchesShown = 10

    let windowStart: String
    let chart: HourlyChart
    let verdictColumns: [String]
    let columnCount: Int
    let providerRows: [CountRow]
    let totalRow: CountRow?
    let rejections: [ReasonCount]
    let stateRows: [StateCount]
    let orderTotal: Int
    let mismatchTotal: Int
    let hasMismatchOrders: Bool
    let mismatchOrders: [OrderRow]
    let mismatchMore: Bool
    let mismatchShown: Int
    let targetRows: [TargetRow]
    /// Reconciliation: due or overdue orders of the accounts asked, the longest waiting's due
    /// time, and the orders flagged `unsettled`.
    var awaitingInquiry = 0
    var oldestAwaiting: String?
    var unsettledTotal = 0
    var reconciling = false

    /// One line of the provider-by-verdict table.
    struct CountRow: Sendable {
        let rowLabel: String
        let cells: [Cell]
        let rowTotal: Int
    }

    struct Cell: Sendable {
        let cellVerdict: String
        let cellCount: Int
        /// The notifications counted, when there are any.
        let cellLink: String?
    }

    struct StateCount: Sendable {
        let stateName: String
        let stateCount: Int
        let stateLink: String
    }

    init(
        window: OverviewWindow, counts: [HourlyNotificationCount], states: [OrderState: Int], flagged: FlaggedOrders,
        targets: [DeliveryTargetStatus]
    ) {
        windowStart = window.start
        let inWindow = counts.filter { $0.hour >= window.start }
        chart = HourlyChart(window: window, counts: inWindow)
        verdictColumns = Verdict.allCases.map(\.rawValue)
        columnCount = Verdict.allCases.count + 2

        var byProvider: [String: [Verdict: Int]] = [:]
        for count in inWindow { byProvider[count.provider, default: [:]][count.verdict, default: 0] += count.count }
        let since = window.start
        providerRows = byProvider.keys.sorted().map { provider in
            let verdicts = byProvider[provider] ?? [:]
            return CountRow(
                rowLabel: provider,
                cells: Verdict.allCases.map { verdict in
                    let count = verdicts[verdict] ?? 0
                    return Cell(
                        cellVerdict: verdict.rawValue, cellCount: count,
                        cellLink: count == 0 ? nil : URLText.link("/notifications", [
                            ("provider", provider), ("verdict", verdict.rawValue), ("since", since),
                        ]))
                },
                rowTotal: verdicts.values.reduce(0, +))
        }
        if providerRows.isEmpty {
            totalRow = nil
        } else {
            totalRow = CountRow(
                rowLabel: "all providers",
                cells: Verdict.allCases.map { verdict in
                    let count = inWindow.filter { $0.verdict == verdict }.reduce(0) { $0 + $1.count }
                    return Cell(cellVerdict: verdict.rawValue, cellCount: count, cellLink: nil)
                },
                rowTotal: inWindow.reduce(0) { $0 + $1.count })
        }
        rejections = rejectionCounts(inWindow, since: since)

        stateRows = OrderState.allCases.compactMap { state in
            guard let count = states[state], count > 0 else { return nil }
            return StateCount(stateName: state.rawValue, stateCount: count, stateLink: URLText.link("/orders", [("state", state.rawValue)]))
        }
        orderTotal = states.values.reduce(0, +)
        mismatchTotal = flagged.total
        mismatchOrders = flagged.newest.map(OrderRow.init)
        hasMismatchOrders = !mismatchOrders.isEmpty
        mismatchShown = mismatchOrders.count
        mismatchMore = flagged.total > flagged.newest.count
        targetRows = targets.map(TargetRow.init)
    }
}

/// The overview's chart: notifications per hour as bars stacked by verdict, drawn as SVG on
/// the server (no script). Only numbers, fixed verdict names and hours go into it.
struct HourlyChart: Sendable {
    static let viewWidth = 720
    static let viewHeight = 230
    let width = HourlyChart.viewWidth
    let height = HourlyChart.viewHeight
    let caption: String
    let gridLines: [GridLine]
    let bars: [Bar]
    let hourLabels: [HourLabel]
    /// The verdicts drawn, in stacking order (bottom first).
    let legend: [String]

    struct GridLine: Sendable {
        let x1: Int
        let x2: Int
        let y: Double
        let label: String
        let labelX: Int
        let labelY: Double
    }

    struct Bar: Sendable {
        let x: Double
        let top: Double
        let width: Double
        let fullHeight: Double
        let summary: String
        let segments: [Segment]
    }

    struct Segment: Sendable {
        let verdict: String
        let x: Double
        let y: Double
        let width: Double
        let height: Double
    }

    struct HourLabel: Sendable {
        let x: Double
        let y: Int
        let label: String
    }

    init(window: OverviewWindow, counts: [HourlyNotificationCount]) {
        let left = 48.0, right = 8.0, top = 10.0, bottom = 26.0
        let width = Self.viewWidth, height = Self.viewHeight
        let plotWidth = Double(width) - left - right
        let plotHeight = Double(height) - top - bottom
        var perHour: [String: [Verdict: Int]] = [:]
        for count in counts { perHour[count.hour, default: [:]][count.verdict, default: 0] += count.count }
        let totals = window.hourStarts.map { perHour[$0]?.values.reduce(0, +) ?? 0 }
        let scaleTop = Self.roundedUp(totals.max() ?? 0)
        let step = plotWidth / Double(window.hourStarts.count)
        let barWidth = (step * 0.72).rounded(toPlaces: 2)
        let drawn = Verdict.allCases.filter { verdict in perHour.values.contains { ($0[verdict] ?? 0) > 0 } }
        legend = drawn.map(\.rawValue)
        bars = window.hourStarts.enumerated().map { index, hour in
            let verdicts = perHour[hour] ?? [:]
            let x = (left + Double(index) * step + (step - barWidth) / 2).rounded(toPlaces: 2)
            var y = top + plotHeight
            var segments: [Segment] = []
            for verdict in drawn {
                guard let count = verdicts[verdict], count > 0 else { continue }
                let segmentHeight = plotHeight * Double(count) / Double(scaleTop)
                y -= segmentHeight
                segments.append(Segment(
                    verdict: verdict.rawValue, x: x, y: y.rounded(toPlaces: 2), width: barWidth,
                    height: segmentHeight.rounded(toPlaces: 2)))
            }
            let total = totals[index]
            let parts = drawn.compactMap { verdict in verdicts[verdict].map { "\($0) \(verdict.rawValue)" } }
            let hourText = String(hour.dropFirst(11).prefix(5))
            let summary = "\(hour.prefix(10)) \(hourText) UTC: \(total) notification\(total == 1 ? "" : "s")"
                + (parts.isEmpty ? "" : " (" + parts.joined(separator: ", ") + ")")
            return Bar(x: x, top: top, width: barWidth, fullHeight: plotHeight, summary: summary, segments: segments)
        }
        gridLines = [0, 1, 2].map { fraction in
            let value = Double(scaleTop * fraction) / 2
            let label = value == value.rounded() ? "\(Int(value))" : "\(value)"
            let y = (top + plotHeight - plotHeight * Double(fraction) / 2).rounded(toPlaces: 2)
            return GridLine(x1: Int(left), x2: width - Int(right), y: y, label: label, labelX: Int(left) - 6, labelY: y + 4)
        }
        hourLabels = window.hourStarts.enumerated().compactMap { index, hour in
            guard index % 3 == 0 else { return nil }
            return HourLabel(
                x: (left + Double(index) * step + step / 2).rounded(toPlaces: 2), y: height - 8,
                label: String(hour.dropFirst(11).prefix(5)))
        }
        caption = "Notifications per hour by verdict, \(window.start.prefix(16).replacingOccurrences(of: "T", with: " ")) UTC to now; "
            + "\(totals.reduce(0, +)) in all, at most \(totals.max() ?? 0) in one hour"
    }

    /// The axis top: `value` rounded up to 1, 2 or 5 times a power of ten (at least 2).
    static func roundedUp(_ value: Int) -> Int {
        guard value > 2 else { return 2 }
        var power = 1
        while power * 10 < value { power *= 10 }
        for factor in [1, 2, 5, 10] where power * factor >= value { return power * factor }
        return power * 10
    }
}

extension Double {
    func rounded(toPlaces places: Int) -> Double {
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        return (self * scale).rounded() / scale
    }
}
