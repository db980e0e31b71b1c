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
            MetricsSystem.bootstrap(factory)
            existing = registry
            return registry
        }
    }

    static func sanitize(_ name: String) -> String {
        String(name.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == ":") ? $0 : "_" })
    }
}
