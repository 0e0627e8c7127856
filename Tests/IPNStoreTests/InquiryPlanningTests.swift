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
import IPNStore
import Testing

@Suite("InquiryPlanning: what an inquiry's answer writes and how the order's schedule moves, decided without a store")
struct InquiryPlanningTests {
    static let minute: Int64 = 60_000
    static let hour: Int64 = 3_600_000
    static let day: Int64 = 86_400_000
    /// The order's last change (its creation, `Given.dayBefore`); moments are counted from it.
    static let changedAt = Timestamp.parse(Given.dayBefore) ?? 0
    /// The lease a scheduled inquiry's claim set as the order's due time.
    static let lease = at(10 * minute + 25_000)

    static func at(_ offset: Int64) -> String { Timestamp.format(epochMilliseconds: changedAt + offset) }

    /// Order O-1 (row 7), in the schedule counted from its creation, at `step`, due at `dueAt`.
    static func scheduled(_ state: OrderState, step: Int = 0, dueAt: String? = lease, id: Int64 = 7) -> StoredOrder {
        var order = Given.order(state, inquiry: InquiryScheduleState(from: at(0), step: step, dueAt: dueAt))
        order.id = id
        return order
    }

    /// An inquiry about O-1 asked at `askedAt` (after the change): scheduled when it has a claim, by hand otherwise.
    static func inquiry(asked askedAt: Int64, claim: InquiryClaim? = nil, result: InquiryResult = .notSettled) -> CompletedInquiry {
        CompletedInquiry(
            scope: Given.scope, orderRef: "O-1", askedAt: at(askedAt), trigger: claim == nil ? .cli : .schedule,
            url: "https://status.example/orders/O-1", durationMs: 40, httpStatus: 200, providerStatus: nil, result: result, claim: claim)
    }

    static func claim(_ next: InquirySchedule.Next) -> InquiryClaim { InquiryClaim(orderID: 7, lease: lease, next: next) }

    static let answer = InquiryAnswerBytes(headers: "{}", body: Array("{}".utf8))

    // MARK: Which facts are written

    typealias Told = (order: StoredOrder, fact: VerifiedNotification, verdict: Verdict, writes: Bool)

    static let told: [TableRow<Told>] = [
        TableRow("a fact that moves the order", (Given.order(.pending), Given.note(.transition(.paid)), .applied, true)),
        TableRow("pending again: not settled, moves nothing", (Given.order(.pending), Given.note(.transition(.pending)), .stale, false)),
        TableRow("authorized again", (Given.order(.authorized), Given.note(.transition(.authorized)), .stale, false)),
        TableRow("pending, for an authorized order", (Given.order(.authorized), Given.note(.transition(.pending)), .stale, false)),
        TableRow("paid, for an order paid under another key", (Given.order(.paid), Given.note(.transition(.paid)), .stale, true)),
        TableRow("a refund adding nothing", (RecordingPlannerTests.partlyRefunded, Given.refund("r1", 300), .stale, true)),
        TableRow("another amount than expected", (Given.order(.expected, expected: Given.usd(1000)),
                                                  Given.note(.transition(.paid), amount: Given.usd(900)), .mismatch, true)),
        TableRow("a status with no mapping", (Given.order(.pending), Given.note(.unknownStatus), .unknownStatus, true)),
    ]

    @Test("a fact is written unless it is stored already or says, moving nothing, that the order has not settled", arguments: told)
    func writes(_ row: TableRow<Told>) {
        let plan = Given.plan(row.value.fact, on: row.value.order)
        #expect(plan.outcome.verdict == row.value.verdict)
        #expect(InquiryPlanning.writes(plan, fact: row.value.fact) == row.value.writes)
    }

    @Test("a fact already stored under its dedup key is no news")
    func duplicateIsNoNews() {
        let fact = Given.note(.transition(.paid))
        let first = FirstDelivery(notificationID: 5, orderRef: "O-1", orderID: 7, currentOrderRef: "O-1", orderState: .paid)
        let plan = Given.plan(fact, RecordingFacts(firstDelivery: first))
        #expect(plan.outcome.verdict == .duplicate)
        #expect(!InquiryPlanning.writes(plan, fact: fact))
    }

    // MARK: The schedule's next step

    typealias Scheduled = (order: StoredOrder?, changed: Bool, next: InquirySchedule.Next, action: InquiryPlanning.ScheduleAction)

    static let scheduledCases: [TableRow<Scheduled>] = [
        TableRow("nothing changed: the step the claim names", (scheduled(.pending), false, .ask(atMillis: changedAt + 30 * minute, step: 1),
                                                            .next(dueAt: at(30 * minute), step: 1))),
        TableRow("authorized, nothing changed", (scheduled(.authorized), false, .ask(atMillis: changedAt + hour, step: 2),
                                                 .next(dueAt: at(hour), step: 2))),
        TableRow("nothing changed at the last step: give up", (scheduled(.pending, step: 12), false, .giveUp, .giveUp)),
        TableRow("the answer changed the order: its schedule started again", (scheduled(.pending), true, .giveUp, .none)),
        TableRow("the order settled", (scheduled(.paid), false, .ask(atMillis: changedAt + 30 * minute, step: 1), .none)),
        TableRow("another change since the claim moved its due time", (scheduled(.pending, dueAt: at(hour)), false, .giveUp, .none)),
        TableRow("another order than the claimed one", (scheduled(.pending, id: 8), false, .giveUp, .none)),
        TableRow("no order", (nil, false, .giveUp, .none)),
    ]

    @Test("a scheduled inquiry that changes nothing moves its order as its claim says, if the claim still holds it", arguments: scheduledCases)
    func scheduledInquiry(_ row: TableRow<Scheduled>) {
        let inquiry = Self.inquiry(asked: 10 * Self.minute + 2000, claim: Self.claim(row.value.next))
        let action = InquiryPlanning.scheduleAction(inquiry, order: row.value.order, changed: row.value.changed, schedule: .standard)
        #expect(action == row.value.action)
    }

    typealias ByHand = (order: StoredOrder, askedAt: Int64, changed: Bool, action: InquiryPlanning.ScheduleAction)

    static let byHandCases: [TableRow<ByHand>] = [
        TableRow("between steps: the first step after the ask", (scheduled(.pending, step: 1, dueAt: at(30 * minute)), 40 * minute, false,
                                                              .next(dueAt: at(hour), step: 2))),
        TableRow("before its step was due: the step after it", (scheduled(.pending, step: 0, dueAt: at(10 * minute)), 5 * minute, false,
                                                             .next(dueAt: at(30 * minute), step: 1))),
        TableRow("hours late: the steps passed are skipped", (scheduled(.authorized, step: 0, dueAt: at(10 * minute)), 5 * hour, false,
                                                           .next(dueAt: at(6 * hour), step: 4))),
        TableRow("past give_up_after", (scheduled(.pending, step: 12, dueAt: at(7 * day)), 7 * day + minute, false, .giveUp)),
        TableRow("the answer changed the order", (scheduled(.pending, step: 1, dueAt: at(30 * minute)), 40 * minute, true, .none)),
        TableRow("an order not scheduled (given up)", (scheduled(.pending, step: 12, dueAt: nil), 8 * day, false, .none)),
        TableRow("a settled order", (scheduled(.refunded, step: 1, dueAt: at(30 * minute)), 40 * minute, false, .none)),
    ]

    @Test("an inquiry asked by hand that changes nothing moves a scheduled order to the step after the ask", arguments: byHandCases)
    func byHand(_ row: TableRow<ByHand>) {
        let action = InquiryPlanning.scheduleAction(
            Self.inquiry(asked: row.value.askedAt), order: row.value.order, changed: row.value.changed, schedule: .standard)
        #expect(action == row.value.action)
    }

    @Test("an order scheduled before the schedule's start was kept counts from its creation")
    func countsFromCreation() {
        var order = Self.scheduled(.pending, dueAt: Self.at(10 * Self.minute))
        order.inquiry.from = nil
        let action = InquiryPlanning.scheduleAction(Self.inquiry(asked: 15 * Self.minute), order: order, changed: false, schedule: .standard)
        #expect(action == .next(dueAt: Self.at(30 * Self.minute), step: 1))
    }

    @Test("a claim holds its order while nothing moved the order's due time and it has not settled")
    func holds() {
        let claim = Self.claim(.giveUp)
        #expect(InquiryPlanning.holds(claim, order: Self.scheduled(.pending)))
        #expect(InquiryPlanning.holds(claim, order: Self.scheduled(.authorized)))
        #expect(!InquiryPlanning.holds(claim, order: Self.scheduled(.paid)))
        #expect(!InquiryPlanning.holds(claim, order: Self.scheduled(.pending, dueAt: Self.at(Self.hour))))
        #expect(!InquiryPlanning.holds(claim, order: Self.scheduled(.pending, dueAt: nil)))
        #expect(!InquiryPlanning.holds(claim, order: Self.scheduled(.pending, id: 8)))
        #expect(!InquiryPlanning.holds(claim, order: nil))
    }

    // MARK: The record's conclusion

    typealias Concluded = (result: InquiryResult, written: [RecordOutcome], outcome: InquiryOutcome, error: String?, notificationID: Int64?,
                           verdict: Verdict?, isAnswer: Bool)

    static let conclusions: [TableRow<Concluded>] = [
        TableRow("facts, none written", (.facts([Given.note(.transition(.pending))], answer: answer), [], .noNews, nil, nil, nil, true)),
        TableRow("facts written: the last one", (.facts([Given.note(.transition(.authorized)), Given.note(.transition(.paid))], answer: answer),
                                             [RecordOutcome(notificationID: 41, verdict: .applied),
                                              RecordOutcome(notificationID: 42, verdict: .stale)],
                                             .recorded, nil, 42, .stale, true)),
        TableRow("not settled yet", (.notSettled, [], .noNews, nil, nil, nil, true)),
        TableRow("not found", (.notFound, [], .notFound, nil, nil, nil, true)),
        TableRow("no usable answer", (.error("timeout after 10 s"), [], .error, "timeout after 10 s", nil, nil, false)),
        TableRow("a bad signature", (.badSignature("signature does not verify"), [], .badSignature, "signature does not verify", nil, nil, false)),
        TableRow("cannot ask", (.cannotAsk("iPay88 needs the amount"), [], .cannotAsk, "iPay88 needs the amount", nil, nil, false)),
    ]

    @Test("the record says what the answer came to, naming the last notification written", arguments: conclusions)
    func conclusion(_ row: TableRow<Concluded>) {
        let concluded = InquiryPlanning.conclusion(row.value.result, written: row.value.written)
        #expect(concluded.outcome == row.value.outcome)
        #expect(concluded.error == row.value.error)
        #expect(concluded.notificationID == row.value.notificationID)
        #expect(concluded.verdict == row.value.verdict)
        #expect(concluded.outcome.isAnswer == row.value.isAnswer)
    }

    // MARK: One scheduled inquiry, planned as a backend records it

    /// What recording a scheduled inquiry telling `fact` decides, as a backend does it: the
    /// fact's plan (written or not), then the schedule's action for the order it leaves.
    private func record(_ fact: VerifiedNotification, on order: StoredOrder) -> (plan: WritePlan, writes: Bool,
                                                                                action: InquiryPlanning.ScheduleAction) {
        let askedAt = 10 * Self.minute + 2000
        let planner = RecordingPlanner(now: Self.at(askedAt + 500))
        let plan = Given.plan(fact, on: order, planner: planner)
        let writes = InquiryPlanning.writes(plan, fact: fact)
        let next = InquirySchedule.standard.next(afterStep: order.inquiry.step, changedAt: Self.changedAt, askedAt: Self.changedAt + askedAt)
        let inquiry = Self.inquiry(asked: askedAt, claim: Self.claim(next), result: .facts([fact], answer: Self.answer))
        let after = writes ? plan.order?.order : order
        let action = InquiryPlanning.scheduleAction(inquiry, order: after, changed: writes && !plan.transitions.isEmpty, schedule: .standard)
        return (plan, writes, action)
    }

    @Test("an answer that changes the order starts its schedule again from the change")
    func changeRestarts() {
        let (plan, writes, action) = record(Given.note(.transition(.authorized)), on: Self.scheduled(.pending))
        #expect(writes)
        #expect(action == .none)
        let changeAt = 10 * Self.minute + 2500
        #expect(plan.order?.order.inquiry == InquiryScheduleState(from: Self.at(changeAt), step: 0, dueAt: Self.at(changeAt + 10 * Self.minute)))
    }

    @Test("an answer that tells what is stored, or only flags, moves the order to its next step")
    func noChangeMovesOn() {
        let (_, writes, action) = record(Given.note(.transition(.pending)), on: Self.scheduled(.pending))
        #expect(!writes)
        #expect(action == .next(dueAt: Self.at(30 * Self.minute), step: 1))

        var expecting = Self.scheduled(.pending)
        expecting.expected = Given.usd(1000)
        let flagged = record(Given.note(.transition(.paid), amount: Given.usd(900)), on: expecting)
        #expect(flagged.plan.outcome.verdict == .mismatch)
        #expect(flagged.writes)
        #expect(flagged.action == .next(dueAt: Self.at(30 * Self.minute), step: 1))
    }

    @Test("an answer that settles the order ends its schedule")
    func settledEnds() {
        let (plan, writes, action) = record(Given.note(.transition(.paid)), on: Self.scheduled(.authorized))
        #expect(writes)
        #expect(action == .none)
        #expect(plan.order?.order.state == .paid)
        #expect(plan.order?.order.inquiry.dueAt == nil)
    }

    @Test("giving up flags the order unsettled once, with an event only when the flag is new, and stops asking; settling removes it")
    func giveUp() {
        let order = Self.scheduled(.pending, step: 12, dueAt: Self.lease)
        let action = InquiryPlanning.scheduleAction(
            Self.inquiry(asked: 7 * Self.day, claim: Self.claim(.giveUp)), order: order, changed: false, schedule: .standard)
        #expect(action == .giveUp)

        let routes = [DeliveryRoute(name: "app"), DeliveryRoute(name: "changes", types: [.stateChanged])]
        let planner = RecordingPlanner(now: Self.at(7 * Self.day), routes: routes)
        let plan = planner.plan(giveUp: order)
        #expect(plan.outcome.verdict == .recorded)
        #expect(plan.outcome.flag == .unsettled)
        #expect(plan.transitions.isEmpty)
        #expect(PlanChange.events(plan) == [.flagged(.pending, .unsettled, by: .none)])
        #expect(plan.events.map(\.routes) == [["app"]])
        guard let given = plan.order?.order else {
            Issue.record("the give-up writes no order")
            return
        }
        #expect(given.state == .pending)
        #expect(given.flags == ["unsettled"])
        #expect(given.inquiry.dueAt == nil)

        let again = planner.plan(giveUp: given)
        #expect(again.outcome.flag == nil)
        #expect(again.events.isEmpty)
        #expect(again.order?.order.flags == ["unsettled"])
        #expect(again.order?.order.inquiry.dueAt == nil)

        var mismatched = order
        mismatched.flags = ["amount_mismatch"]
        #expect(planner.plan(giveUp: mismatched).order?.order.flags == ["amount_mismatch", "unsettled"])

        let paid = Given.plan(Given.note(.transition(.paid)), on: given)
        #expect(paid.order?.order.flags == [])
        #expect(paid.order?.order.inquiry == InquiryScheduleState())
    }
}
