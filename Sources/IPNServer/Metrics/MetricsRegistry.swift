import IPNCore
import IPNStore
import Prometheus

/// One daemon's Prometheus registry: the swift-metrics instruments of `ServerMetrics`, orders
/// by state (refreshed from the store at each scrape) and build info. Each daemon owns one,
/// so tests can run many daemons in one process without sharing counters.
final class MetricsRegistry: Sendable {
    let registry = PrometheusCollectorRegistry()
    let server: ServerMetrics
    private let ordersByState: [OrderState: Gauge]

    init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        // Notifications are answered in milliseconds unless the disk is slow; commits fsync.
        factory.defaultDurationHistogramBuckets = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
        ]
        factory.defaultValueHistogramBuckets = [1, 2, 4, 8, 16, 32, 64, 128, 256]
        server = ServerMetrics(factory: factory)
        let orders = MetricNameDescriptor(metricName: "ipnd_orders", unitName: "", helpText: "Orders in the store by state")
        var gauges: [OrderState: Gauge] = [:]
        for state in OrderState.allCases {
            gauges[state] = registry.makeGauge(descriptor: orders, labels: [("state", state.rawValue)])
        }
        ordersByState = gauges
        let build = MetricNameDescriptor(metricName: "ipnd_build_info", unitName: "", helpText: "The running ipnd build; always 1")
        registry.makeGauge(descriptor: build, labels: [("version", BuildInfo.version)]).set(to: 1)
    }

    /// The Prometheus text exposition, with order counts read from `store` now. When the store
    /// cannot be read, the order gauges keep their last values.
    func scrape(store: any StoreReading) async -> String {
        if let counts = try? await store.orderCountsByState() {
            for (state, gauge) in ordersByState { gauge.set(to: Double(counts[state] ?? 0)) }
        }
        return registry.emitToString()
    }
}

/// What this build of ipnd is.
public enum BuildInfo {
    public static let version = "0.1.0"
}
