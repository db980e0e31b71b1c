import Foundation

/// The project's test fixtures (`Tests/Fixtures/`): real offers from Chromium, Firefox ESR and
/// aiortc (`sdp/`, see its README for each client's quirks). Read from the source tree, so
/// every test target shares one copy.
public enum Fixtures {
    /// `Tests/Fixtures` of this checkout.
    public static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tests/Fixtures")

    /// The root of this checkout (for the committed fuzz corpora, `Fuzz/Corpus/`).
    public static let repository = directory.deletingLastPathComponent().deletingLastPathComponent()

    /// The datagrams of a committed fuzz input in `FuzzInput` form (a mode byte, then datagrams
    /// each behind a 2-byte big-endian length), e.g. `Fuzz/Corpus/FuzzDTLS/server-client-hello`.
    public static func fuzzDatagrams(_ path: String) throws -> [[UInt8]] {
        let bytes = [UInt8](try Data(contentsOf: repository.appendingPathComponent(path)))
        var datagrams: [[UInt8]] = []
        var offset = 1
        while offset + 2 <= bytes.count {
            let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
            offset += 2
            datagrams.append(Array(bytes[offset..<min(offset + length, bytes.count)]))
            offset += length
        }
        return datagrams
    }

    /// The text of `sdp/<name>` (e.g. `chrome-av-2slots.sdp`).
    public static func sdp(_ name: String) throws -> String {
        try String(contentsOf: directory.appendingPathComponent("sdp/\(name)"), encoding: .utf8)
    }
}
