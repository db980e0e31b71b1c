import Foundation
import Hummingbird
import NIOCore
import Prometheus
import Rooms

extension ControlAPI {
    /// Health, readiness, Prometheus metrics and the OpenAPI document: no authentication.
    func addOperationRoutes(_ router: Router<ChorusRequestContext>, _ routes: inout RouteTable) {
        router.route(&routes, .get, "/healthz") { _, _ in
            JSONBody.response(["status": "ok"])
        }
        router.route(&routes, .get, "/readyz") { _, _ in
            guard !self.isDraining else {
                throw APIError(.serviceUnavailable, "draining", "the server is shutting down",
                               headers: [.retryAfter: "5"])
            }
            // Ready means the database answers.
            _ = try await self.database.applicationCount()
            return JSONBody.response(["status": "ready"])
        }
        router.route(&routes, .get, "/metrics") { _, _ in
            self.metrics.openRooms.record(await self.registry.count)
            let counts = await self.registry.participantCounts()
            self.metrics.participantsProgressing.record(counts.progressing)
            self.metrics.participantsEstablished.record(counts.established)
            self.metrics.roomQueueDatagrams.record(RoomQueueDepth.current)
            var bytes: [UInt8] = []
            self.prometheus.emit(into: &bytes)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }
        let document = OpenAPIDocument.load()
        router.route(&routes, .get, "/v1/openapi.yaml") { _, _ in
            guard let document else {
                throw APIError(.notFound, "openapiUnavailable", "the OpenAPI document is not installed")
            }
            return Response(
                status: .ok, headers: [.contentType: "application/yaml; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: document)))
        }
    }
}

/// Finds `openapi.yaml`: next to the executable (SwiftPM copies resources into
/// `Chorus_ControlAPI.resources/`), at `CHORUS_OPENAPI_PATH`, or in the source tree.
enum OpenAPIDocument {
    static func load() -> Data? {
        var candidates: [String] = []
        if let path = ProcessInfo.processInfo.environment["CHORUS_OPENAPI_PATH"] { candidates.append(path) }
        let executableDir = URL(fileURLWithPath: CommandLine.arguments.first ?? ".").deletingLastPathComponent()
        candidates.append(executableDir.appendingPathComponent("Chorus_ControlAPI.resources/openapi.yaml").path)
        let sourceDir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        candidates.append(sourceDir.appendingPathComponent("Resources/openapi.yaml").path)
        for path in candidates {
            if let data = FileManager.default.contents(atPath: path) { return data }
        }
        return nil
    }
}
