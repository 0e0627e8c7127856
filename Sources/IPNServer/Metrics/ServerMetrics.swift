import CoreMetrics
import IPNCore

/// The daemon's metrics, created once so the hot path only increments existing instruments.
public struct ServerMetrics: Sendable {
    private let notifications: [String: Counter]
    private let latency: [String: Timer]
    private let tooLarge: [String: Counter]
    private let unavailable: [String: Counter]
    let commitDuration: Timer
    let commitBatchSize: Recorder
    let commitFailures: Counter
    private let timeouts: Counter

    /// - Parameter factory: where the instruments live (the daemon's own Prometheus registry;
    ///   never the process-wide `MetricsSystem`, so several daemons can share a process).
    public init(factory: any MetricsFactory) {
        var notifications: [String: Counter] = [:]
        var latency: [String: Timer] = [:]
        var tooLarge: [String: Counter] = [:]
        var unavailable: [String: Counter] = [:]
        for provider in ProviderRegistry.all.map({ $0.name }) {
            for verdict in Verdict.allCases {
                notifications[Self.key(provider, verdict)] = Counter(
                    label: "ipnd_notifications_total", dimensions: [("provider", provider), ("verdict", verdict.rawValue)],
                    factory: factory)
            }
            latency[provider] = Timer(label: "ipnd_request_duration_seconds", dimensions: [("provider", provider)],
                                      preferredDisplayUnit: .seconds, factory: factory)
            tooLarge[provider] = Counter(label: "ipnd_requests_too_large_total", dimensions: [("provider", provider)],
                                         factory: factory)
            unavailable[provider] = Counter(label: "ipnd_store_unavailable_total", dimensions: [("provider", provider)],
                                            factory: factory)
        }
        self.notifications = notifications
        self.latency = latency
        self.tooLarge = tooLarge
        self.unavailable = unavailable
        commitDuration = Timer(label: "ipnd_store_commit_duration_seconds", preferredDisplayUnit: .seconds, factory: factory)
        commitBatchSize = Recorder(label: "ipnd_store_commit_batch_size", aggregate: true, factory: factory)
        commitFailures = Counter(label: "ipnd_store_commit_failures_total", factory: factory)
        timeouts = Counter(label: "ipnd_request_timeouts_total", factory: factory)
    }

    func requestTimedOut() { timeouts.increment() }

    private static func key(_ provider: String, _ verdict: Verdict) -> String { "\(provider)|\(verdict.rawValue)" }

    func notification(provider: String, verdict: Verdict, latency duration: Duration) {
        notifications[Self.key(provider, verdict)]?.increment()
        latency[provider]?.record(duration: duration)
    }

    func tooLarge(provider: String) { tooLarge[provider]?.increment() }

    func storeUnavailable(provider: String) { unavailable[provider]?.increment() }

    /// Feeds the store's commit observer.
    func commit(batchSize: Int, seconds: Double, failed: Bool) {
        commitDuration.recordNanoseconds(Int64(seconds * 1e9))
        commitBatchSize.record(batchSize)
        if failed { commitFailures.increment() }
    }
}
