import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension ControlAPI {
    /// The browser client: `GET /` (index.html), `/app.js` and `/style.css`, without
    /// authentication. The files are plain HTML/JS/CSS from the `web` resource folder, read once
    /// when the router is built; the page gets its access token from `/demo/token` (`--demo`).
    func addWebRoutes(_ router: Router<ChorusRequestContext>, _ routes: inout RouteTable) {
        for file in WebClientFile.all {
            let contents = WebClientFile.load(file.name)
            router.route(&routes, .get, file.path) { _, _ in
                guard let contents else {
                    throw APIError(.notFound, "webClientUnavailable", "the web client is not installed")
                }
                return Response(status: .ok, headers: [
                    .contentType: file.contentType,
                    // Always revalidate: a new build's page must not run against an old script.
                    .cacheControl: "no-cache",
                    HTTPField.Name("x-content-type-options")!: "nosniff",
                ], body: .init(byteBuffer: ByteBuffer(bytes: contents)))
            }
        }
    }
}

/// One file of the web client: where it is served and what it is.
struct WebClientFile: Sendable {
    let path: String
    let name: String
    let contentType: String

    static let all = [
        WebClientFile(path: "/", name: "index.html", contentType: "text/html; charset=utf-8"),
        WebClientFile(path: "/app.js", name: "app.js", contentType: "text/javascript; charset=utf-8"),
        WebClientFile(path: "/style.css", name: "style.css", contentType: "text/css; charset=utf-8"),
    ]

    /// The file's bytes, found where `OpenAPIDocument` finds its document: in the resource
    /// folder SwiftPM copies next to the executable (`Chorus_ControlAPI.resources/web/`), or in
    /// the source tree for a binary run from its build folder after the sources moved on.
    static func load(_ name: String) -> Data? {
        let executableDir = URL(fileURLWithPath: CommandLine.arguments.first ?? ".").deletingLastPathComponent()
        let sourceDir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let candidates = [
            executableDir.appendingPathComponent("Chorus_ControlAPI.resources/web/\(name)").path,
            sourceDir.appendingPathComponent("Resources/web/\(name)").path,
        ]
        for path in candidates {
            if let data = FileManager.default.contents(atPath: path) { return data }
        }
        return nil
    }
}
