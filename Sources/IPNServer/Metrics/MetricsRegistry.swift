import CoreMetrics
import IPNCore
import IPNStore
import Prometheus

/// One daemon's Prometheus registry: the swift-metrics instruments of `ServerMetrics`, orders
/// by state (refreshed from the store at each scrape) and build info. Each daemon owns one,
/// so tests can run many daemons in one process without sharing counters.
///
/// Instruments are made through `factory` (swift-metrics' `Counter`, `Gauge`, `Timer`,
/// `Recorder`) with no help text: `scrape` prints each family's HELP from `MetricHelp`, and
/// families and series in a stable order (`PrometheusExposition`).
final class MetricsRegistry: Sendable {
    let registry = PrometheusCollectorRegistry()
    /// Makes instruments in `registry`, with ipnd's histogram buckets.
    let factory: PrometheusMetricsFactory
    let server: ServerMetrics
    private let ordersByState: [OrderState: CoreMetrics.Gauge]

    init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        // Notifications are answered in milliseconds unless the disk is slow; commits fsync.
        factory.defaultDurationHistogramBuckets = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
        ]
        factory.defaultValueHistogramBuckets = [1, 2, 4, 8, 16, 32, 64, 128, 256]
        self.factory = factory
        server = ServerMetrics(factory: factory)
        var gauges: [OrderState: CoreMetrics.Gauge] = [:]
        for state in OrderState.allCases {
            gauges[state] = CoreMetrics.Gauge(label: "ipnd_orders", dimensions: [("state", state.rawValue)], factory: factory)
        }
        ordersByState = gauges
        CoreMetrics.Gauge(label: "ipnd_build_info", dimensions: [("version", BuildInfo.version)], factory: factory).record(1)
    }

    /// The Prometheus text exposition, with order counts read from `store` now: every family
    /// with HELP and TYPE, families sorted by name and series by labels, the same from scrape
    /// to scrape. When the store cannot be read, the order gauges keep their last values.
    func scrape(store: any StoreReading) async -> String {
        if let counts = try? await store.orderCountsByState() {
            for (state, gauge) in ordersByState { gauge.record(Double(counts[state] ?? 0)) }
        }
        return PrometheusExposition(parsing: registry.emitToString()).rendered(help: MetricHelp.text(for:))
    }
}

/// What this build of ipnd is.
public enum BuildInfo {
    public static let version = "0.1.0"
}
