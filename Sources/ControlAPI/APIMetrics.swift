import Metrics

/// The control plane's own counters, through swift-metrics (exported by swift-prometheus).
struct APIMetrics: Sendable {
    let openRooms = Gauge(label: "chorus_rooms_open")
    let registrationsAccepted = Counter(label: "chorus_registrations_total", dimensions: [("result", "accepted")])
    let registrationsReplayed = Counter(label: "chorus_registrations_total", dimensions: [("result", "replayed")])
    let registrationsRefused = Counter(label: "chorus_registrations_total", dimensions: [("result", "refused")])
    let statisticsStored = Counter(label: "chorus_statistics_uploads_total")
    let participantsProgressing = Gauge(label: "chorus_participants", dimensions: [("state", "progressing")])
    let participantsEstablished = Gauge(label: "chorus_participants", dimensions: [("state", "established")])
    /// Datagrams waiting on room queues (`RoomQueueDepth`).
    let roomQueueDatagrams = Gauge(label: "chorus_room_queue_datagrams")

    func countError(code: String) {
        Self.countError(code: code)
    }

    /// Counts an error answer by its code, also for answers written outside the router.
    static func countError(code: String) {
        Counter(label: "chorus_http_errors_total", dimensions: [("code", code)]).increment()
    }
}
