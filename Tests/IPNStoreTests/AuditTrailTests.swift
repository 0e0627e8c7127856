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
import IPNCore
import IPNStore
import IPNStorePostgres
@testable import IPNStoreTestSupport
import IPNTestSupport
import Logging
import PostgresNIO
import Testing

@Suite("The audit trail: one hash chain per store, in the change's transaction (issue 43)", .heavy)
struct AuditTrailTests {
    static let operatorAlice = Principal(name: "alice@example.com", role: .operator, via: .api)

    static func entry(_ index: Int, action: AuditAction = .rawRead) -> AuditEntry {
        var detail = AuditDetail()
        detail.add("count", index)
        detail.add("note", "line\nbreak \"quoted\" \\ tab\t ünïcode")
        return AuditEntry(operatorAlice, clientIP: "192.0.2.\(index % 250)", action: action, target: "notification:\(index)", detail: detail)
    }

    /// Appends `count` records and returns them as appended.
    static func append(_ count: Int, to store: any Store) async throws -> [AuditRecord] {
        var records: [AuditRecord] = []
        for index in 1...count { records.append(try await store.appendAudit(entry(index))) }
        return records
    }

    @Test("records are numbered 1, 2, 3...; each holds the hash of the one before; verify says intact", arguments: Backend.allCases)
    func intact(backend: Backend) async throws {
        let subject = try await StoreUnderTest.make(backend)
        let empty = try await subject.store.verifyAudit()
        #expect(empty.isIntact && empty.checked == 0)
        let records = try await Self.append(5, to: subject.store)
        #expect(records.map(\.id) == [1, 2, 3, 4, 5])
        #expect(records[0].prevHash == String(repeating: "0", count: 64))
        for (earlier, later) in zip(records, records.dropFirst()) { #expect(later.prevHash == earlier.hash) }
        #expect(records.allSatisfy { $0.hash == $0.computedHash && $0.hash.count == 64 })
        let verification = try await subject.store.verifyAudit(pageSize: 2)
        #expect(verification.isIntact)
        #expect(verification.checked == 5 && verification.firstID == 1 && verification.lastID == 5)
        #expect(verification.summary == "audit trail intact: 5 records, 1 to 5")
        // As stored, read back: the same records, newest first.
        #expect(try await subject.store.auditRecords(AuditFilter(limit: 10)) == records.reversed())
        try await subject.close()
    }

    @Test("a field changed, a record deleted, two records swapped: verify names the first bad record", arguments: Backend.allCases)
    func tampered(backend: Backend) async throws {
        for tamper in ["changed", "deleted", "swapped"] {
            let subject = try await StoreUnderTest.make(backend)
            _ = try await Self.append(6, to: subject.store)
            switch tamper {
            case "changed":
                try await subject.execute("UPDATE audit_records SET actor = 'mallory' WHERE id = 3")
            case "deleted":
                try await subject.execute("DELETE FROM audit_records WHERE id = 3")
            default:
                // Records 3 and 4 trade places: every field but the id moves.
                try await subject.execute("""
                    UPDATE audit_records SET
                        at = (SELECT at FROM audit_records o WHERE o.id = 7 - audit_records.id),
                        target = (SELECT target FROM audit_records o WHERE o.id = 7 - audit_records.id),
                        client_ip = (SELECT client_ip FROM audit_records o WHERE o.id = 7 - audit_records.id),
                        detail = (SELECT detail FROM audit_records o WHERE o.id = 7 - audit_records.id),
                        prev_hash = (SELECT prev_hash FROM audit_records o WHERE o.id = 7 - audit_records.id),
                        hash = (SELECT hash FROM audit_records o WHERE o.id = 7 - audit_records.id)
                    WHERE id IN (3, 4)
                    """)
            }
            let verification = try await subject.store.verifyAudit()
            #expect(!verification.isIntact, "\(tamper)")
            let expected: Int64 = tamper == "deleted" ? 4 : 3
            #expect(verification.problem?.id == expected, "\(tamper): \(verification.summary)")
            #expect(verification.checked == 2, "\(tamper)")
            #expect(verification.summary.contains("broken at record \(expected)"), "\(tamper): \(verification.summary)")
            try await subject.close()
        }
    }

    @Test("retention removes the oldest, never the newest; verify then starts after them and says so; the next record follows on", arguments: Backend.allCases)
    func retention(backend: Backend) async throws {
        let subject = try await StoreUnderTest.make(backend)
        let records = try await Self.append(5, to: subject.store)
        // Everything is older than a cutoff in the future: all but the newest go, two at a time.
        #expect(try await subject.store.pruneAudit(before: "2999-01-01T00:00:00.000Z", limit: 2) == 2)
        #expect(try await subject.store.pruneAudit(before: "2999-01-01T00:00:00.000Z", limit: 10) == 2)
        #expect(try await subject.store.pruneAudit(before: "2999-01-01T00:00:00.000Z", limit: 10) == 0)
        let mark = try #require(try await subject.store.auditRetentionMark())
        #expect(mark == AuditRetentionMark(id: 4, hash: records[3].hash))
        let verification = try await subject.store.verifyAudit()
        #expect(verification.isIntact && verification.checked == 1 && verification.firstID == 5)
        #expect(verification.summary == "audit trail intact: 1 record, 5 to 5 (starts at record 5: retention removed the records before it)")
        let next = try await subject.store.appendAudit(Self.entry(6))
        #expect(next.id == 6 && next.prevHash == records[4].hash)
        #expect(try await subject.store.verifyAudit().isIntact)
        // Removing the oldest kept record by hand is caught: it no longer follows the mark.
        try await subject.execute("DELETE FROM audit_records WHERE id = 5")
        let broken = try await subject.store.verifyAudit()
        #expect(broken.problem?.id == 6)
        try await subject.close()
    }

    @Test("an expectation and its audit record commit together; a failed audit write refuses the change", arguments: Backend.allCases)
    func sameTransaction(backend: Backend) async throws {
        let subject = try await StoreUnderTest.make(backend)
        var detail = AuditDetail()
        detail.add("amount", "12.34")
        let audit = AuditEntry(Self.operatorAlice, clientIP: "192.0.2.1", action: .expectationSet, target: "test/default/E1", detail: detail)
        _ = try await subject.store.setExpectation(
            provider: "test", account: "default", orderRef: "E1", amount: Money(minor: 1234, currency: "USD"), audit: audit)
        let written = try await subject.store.auditRecords(AuditFilter(limit: 10))
        #expect(written.count == 1)
        #expect(written.first?.detail == #"{"amount":"12.34","order_state":"expected"}"#)

        // The audit table refuses writes (a trigger stands for a full or read-only store): the
        // expectation is not registered either.
        switch backend {
        case .sqlite:
            try await subject.execute("CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_records BEGIN SELECT RAISE(ABORT, 'audit refused'); END")
        case .postgres:
            try await subject.execute("""
                CREATE FUNCTION refuse_audit() RETURNS trigger AS 'BEGIN RAISE EXCEPTION ''audit refused''; END' LANGUAGE plpgsql
                """)
            try await subject.execute("CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_records FOR EACH ROW EXECUTE FUNCTION refuse_audit()")
        }
        await #expect(throws: StoreError.self) {
            _ = try await subject.store.setExpectation(
                provider: "test", account: "default", orderRef: "E2", amount: Money(minor: 500, currency: "USD"), audit: audit)
        }
        #expect(try await subject.order("E2") == nil)
        // Without an audit record to write (a provider's notification), nothing is refused.
        _ = try await subject.record(notification("P1", .transition(.paid), order: "E3"))
        #expect(try await subject.order("E3")?.order.state == .paid)
        try await subject.close()
    }

    @Test("an inquiry asked by a person, a retry and a resume carry their audit records in their own transactions", arguments: Backend.allCases)
    func otherChanges(backend: Backend) async throws {
        let subject = try await StoreUnderTest.make(backend)
        _ = try await subject.store.setExpectation(provider: "test", account: "default", orderRef: "I1", amount: Money(minor: 100, currency: "USD"))
        let ask = AuditEntry(Self.operatorAlice, clientIP: "192.0.2.1", action: .reconcile, target: "test/default/I1")
        let inquiry = try await subject.store.recordInquiry(CompletedInquiry(
            scope: Scope(provider: "test", account: "default"), orderRef: "I1", askedAt: "2026-11-21T00:00:00.000Z", trigger: .api,
            url: "https://status.example/", durationMs: 12, httpStatus: 404, providerStatus: nil, result: .notFound, audit: ask))
        _ = try await subject.store.retryDeliveries(.ids([7, 8]), now: "2026-11-21T00:00:00.000Z", audit: AuditEntry(
            Self.operatorAlice, clientIP: nil, action: .deliveryRetry, target: DeliveryRetrySelection.ids([7, 8]).auditTarget))
        _ = try await subject.store.resumeTarget("app", now: "2026-11-21T00:00:00.000Z", audit: AuditEntry(
            Self.operatorAlice, clientIP: nil, action: .deliveryResume, target: AuditTarget.deliveryTarget("app")))
        let records = try await subject.store.auditRecords(AuditFilter(limit: 10)).reversed().map { $0 }
        #expect(records.map(\.action) == ["order.reconcile", "delivery.retry", "delivery.resume"])
        #expect(records[0].detail == #"{"inquiry_id":\#(inquiry.id),"inquiry_outcome":"not_found"}"#)
        #expect(records[1].target == "delivery:7,8" && records[1].detail == #"{"retried":0}"#)
        #expect(records[2].target == "target:app" && records[2].detail == #"{"due":0}"#)
        #expect(AuditTarget.notifications([5, 1, 2, 3, 9, 10]) == "notification:1-3,5,9,10")
        try await subject.close()
    }

    @Test("filters: actor, action, outcome, since; keyset pages newest first", arguments: Backend.allCases)
    func filters(backend: Backend) async throws {
        let subject = try await StoreUnderTest.make(backend)
        _ = try await Self.append(4, to: subject.store)
        _ = try await subject.store.appendAudit(AuditEntry(.system, clientIP: nil, action: .daemonStart))
        _ = try await subject.store.appendAudit(AuditEntry(
            actor: "unknown", role: nil, via: .api, action: .refused, outcome: .refused, clientIP: "192.0.2.9"))
        #expect(try await subject.store.auditRecords(AuditFilter(actor: "system")).map(\.id) == [5])
        #expect(try await subject.store.auditRecords(AuditFilter(action: "notification.raw_read")).map(\.id) == [4, 3, 2, 1])
        #expect(try await subject.store.auditRecords(AuditFilter(outcome: .refused)).map(\.id) == [6])
        #expect(try await subject.store.auditRecords(AuditFilter(since: "2999-01-01T00:00:00.000Z")).isEmpty)
        #expect(try await subject.store.auditRecords(AuditFilter(since: "2000-01-01T00:00:00.000Z")).count == 6)
        #expect(try await subject.store.auditRecords(AuditFilter(limit: 2, beforeID: 5)).map(\.id) == [4, 3])
        let system = try #require(try await subject.store.auditRecords(AuditFilter(actor: "system")).first)
        #expect(system.role == nil && system.via == "system" && system.clientIP == nil)
        try await subject.close()
    }

    @Test("two PostgreSQL nodes appending at once: one unbroken chain, ids without gaps",
          .enabled(if: PostgresTestServer.fromEnvironment() != nil, "needs the PostgreSQL test server (make test)"))
    func twoNodes() async throws {
        let (configuration, name) = try await freshPostgresDatabase()
        let first = try await PostgresStore.open(configuration: configuration, location: name, poolSize: 8, logger: testLogger, timeouts: .busyMachine)
        let second = try await PostgresStore.open(configuration: configuration, location: name, poolSize: 8, logger: testLogger, timeouts: .busyMachine)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (node, store) in [first, second].enumerated() {
                for worker in 0..<4 {
                    group.addTask {
                        for index in 0..<25 {
                            _ = try await store.appendAudit(Self.entry(node * 1000 + worker * 100 + index))
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let verification = try await first.verifyAudit(pageSize: 64)
        #expect(verification.isIntact, "\(verification.summary)")
        #expect(verification.checked == 200 && verification.firstID == 1 && verification.lastID == 200)
        _ = try await first.close()
        _ = try await second.close()
    }
}
