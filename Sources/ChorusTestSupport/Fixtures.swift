import Foundation

/// The project's test fixtures (`Tests/Fixtures/`): real offers from Chromium, Firefox ESR and
/// aiortc (`sdp/`, see its README for each client's quirks). Read from the source tree, so
/// every test target shares one copy.
public enum Fixtures {
    /// `Tests/Fixtures` of this checkout.
    public static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tests/Fixtures")

    /// The text of `sdp/<name>` (e.g. `chrome-av-2slots.sdp`).
    public static func sdp(_ name: String) throws -> String {
        try String(contentsOf: directory.appendingPathComponent("sdp/\(name)"), encoding: .utf8)
    }
}
