import Foundation
import IPNCore
import Testing

@Suite("/metrics: Prometheus text that moves with deliveries (issue 4)")
struct MetricsTests {
    @Test("parses as Prometheus text; notification counters, latency and commit histograms, orders by state, build info")
    func countersMove() async throws {
        let daemon = try await TestDaemon.start()
        let first = try await daemon.get("/metrics", ops: true)
        #expect(first.status == 200)
        #expect(first.headers["Content-Type"].first?.hasPrefix("text/plain; version=0.0.4") == true)
        let before = try parsePrometheus(first.text)
        #expect(before.value("ipnd_notifications_total", ["provider": "unlimint", "verdict": "applied"]) == 0)
        #expect(before.value("ipnd_build_info")  == 1)
        #expect(before.first { $0.name == "ipnd_build_info" }?.labels["version"]?.isEmpty == false)
        #expect(before.value("ipnd_orders", ["state": "paid"]) == 0)
        let commitsBefore = before.value("ipnd_store_commit_duration_seconds_count") ?? 0
        // Checkpoints start at 1000 WAL frames, far beyond this test; their instruments exist from the start.
        #expect(before.value("ipnd_store_checkpoint_duration_seconds_count") == 0)
        #expect(before.value("ipnd_store_checkpoint_failures_total") == 0)

        try await daemon.deliver("unlimint", order: "MET-1", status: "COMPLETED", uid: "m1")
        try await daemon.deliver("unlimint", order: "MET-1", status: "COMPLETED", uid: "m1")  // duplicate
        try await daemon.deliver("unlimint", order: "MET-2", status: "IN_PROGRESS")
        try await daemon.deliver("citcon", order: "MET-3", status: "success")
        let forged = UnlimintRequests.body(order: "MET-4", id: "f", status: "COMPLETED")
        _ = try await daemon.post("/ipn/unlimint", body: forged, headers: UnlimintRequests.headers(for: forged, secret: "guess"))

        let after = try parsePrometheus(try await daemon.get("/metrics", ops: true).text)
        #expect(after.value("ipnd_notifications_total", ["provider": "unlimint", "verdict": "applied"]) == 2)
        #expect(after.value("ipnd_notifications_total", ["provider": "unlimint", "verdict": "duplicate"]) == 1)
        #expect(after.value("ipnd_notifications_total", ["provider": "unlimint", "verdict": "rejected"]) == 1)
        #expect(after.value("ipnd_notifications_total", ["provider": "citcon", "verdict": "applied"]) == 1)
        #expect(after.value("ipnd_notifications_total", ["provider": "alipay", "verdict": "applied"]) == 0)
        #expect(after.value("ipnd_request_duration_seconds_count", ["provider": "unlimint"]) == 4)
        #expect(after.value("ipnd_request_duration_seconds_bucket", ["provider": "unlimint", "le": "+Inf"]) == 4)
        #expect(after.value("ipnd_request_duration_seconds_count", ["provider": "citcon"]) == 1)
        #expect((after.value("ipnd_store_commit_duration_seconds_count") ?? 0) > commitsBefore)
        #expect(after.value("ipnd_orders", ["state": "paid"]) == 2)
        #expect(after.value("ipnd_orders", ["state": "pending"]) == 1)
        #expect(after.value("ipnd_orders", ["state": "refunded"]) == 0)
        try await daemon.stop()
    }

    @Test("each daemon counts only its own deliveries")
    func perDaemonRegistry() async throws {
        let one = try await TestDaemon.start()
        let two = try await TestDaemon.start()
        try await one.deliver("unlimint", order: "ONE-1", status: "COMPLETED")
        let metrics = try parsePrometheus(try await two.get("/metrics", ops: true).text)
        #expect(metrics.value("ipnd_notifications_total", ["provider": "unlimint", "verdict": "applied"]) == 0)
        try await one.stop()
        try await two.stop()
    }
}
