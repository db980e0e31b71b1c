import Metrics
import NIOConcurrencyHelpers
import Prometheus

/// Process-wide metrics setup. swift-metrics allows one bootstrap per process, so the server
/// and the tests share this one registry.
public enum Observability {
    private static let box = NIOLockedValueBox<PrometheusCollectorRegistry?>(nil)

    /// The registry `/metrics` renders, bootstrapping swift-metrics on first use.
    public static func prometheus() -> PrometheusCollectorRegistry {
        box.withLockedValue { existing in
            if let existing { return existing }
            let registry = PrometheusCollectorRegistry()
            var factory = PrometheusMetricsFactory(registry: registry)
            // Hummingbird's metric labels use dots; Prometheus names allow [a-zA-Z0-9_:].
            factory.nameAndLabelSanitizer = { name, labels in
                (sanitize(name), labels.map { (sanitize($0.0), $0.1) })
            }
            // Downlink estimates (bit/s), one sample per participant-second: from an audio-only
            // link to a full gallery.
            factory.valueHistogramBuckets["chorus_downlink_estimate_bits_per_second"] = [
                100_000, 200_000, 300_000, 500_000, 750_000, 1_000_000, 1_500_000, 2_000_000, 3_000_000,
                5_000_000, 10_000_000, 20_000_000,
            ]
            MetricsSystem.bootstrap(factory)
            existing = registry
            return registry
        }
    }

    static func sanitize(_ name: String) -> String {
        String(name.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == ":") ? $0 : "_" })
    }
}
