import Foundation
import FuzzEntryPoints
import Testing

/// Replays every committed fuzz input, without libFuzzer, through the same entry points the
/// harnesses in `Fuzz/<Name>/` call: the seed corpora (`Fuzz/Corpus/<Name>/`) and every input
/// that once crashed a harness (`Fuzz/Crashes/<Name>/`, written by `make fuzz`). A crash input
/// whose bug is back traps this test process, which fails `make test`: the point of committing it.
///
/// The inputs are read from the repository (found from this file's path), not from a resource
/// bundle, so a new crash file needs no manifest change.
@Suite("Fuzz corpus and crash replay")
struct FuzzReplayTests {
    /// `<repo>/Fuzz`, from `<repo>/Tests/FuzzReplayTests/FuzzReplayTests.swift`.
    static let fuzzDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz", isDirectory: true)

    static func inputs(_ kind: String, _ target: FuzzTarget) throws -> [URL] {
        let directory = fuzzDirectory.appendingPathComponent(kind).appendingPathComponent(target.rawValue)
        guard FileManager.default.fileExists(atPath: directory.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { !$0.lastPathComponent.hasPrefix(".") && $0.pathExtension != "md" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    static func replay(_ kind: String, _ target: FuzzTarget) throws -> Int {
        let files = try inputs(kind, target)
        for file in files {
            target.exercise(Array(try Data(contentsOf: file)))
        }
        return files.count
    }

    @Test("seed corpus replays", arguments: FuzzTarget.allCases)
    func corpus(_ target: FuzzTarget) throws {
        let count = try Self.replay("Corpus", target)
        #expect(count > 0, "Fuzz/Corpus/\(target.rawValue) has no seed inputs")
    }

    @Test("crash inputs replay without crashing", arguments: FuzzTarget.allCases)
    func crashes(_ target: FuzzTarget) throws {
        _ = try Self.replay("Crashes", target)
    }

    /// A crash saved under a misspelled folder would never be replayed.
    @Test("every input folder names a fuzz target")
    func foldersNameTargets() throws {
        let names = Set(FuzzTarget.allCases.map(\.rawValue))
        for kind in ["Corpus", "Crashes"] {
            let directory = Self.fuzzDirectory.appendingPathComponent(kind)
            let folders = try FileManager.default.contentsOfDirectory(atPath: directory.path)
                .filter { !$0.hasPrefix(".") && !$0.hasSuffix(".md") }
            for folder in folders {
                #expect(names.contains(folder), "Fuzz/\(kind)/\(folder) is not a fuzz target")
            }
        }
    }

    /// Edge inputs every target must take: empty, one byte, all zeros, all ones.
    @Test("edge inputs", arguments: FuzzTarget.allCases)
    func edges(_ target: FuzzTarget) {
        for input: [UInt8] in [[], [0], [0xFF], [UInt8](repeating: 0, count: 64), [UInt8](repeating: 0xFF, count: 64)] {
            target.exercise(input)
        }
    }

    @Test func multiDatagramFraming() {
        let datagrams: [[UInt8]] = [[1, 2, 3], [], [UInt8](repeating: 7, count: 300)]
        let input = FuzzInput(FuzzInput.encode(mode: 5, datagrams: datagrams))
        #expect(input.mode == 5)
        #expect(input.datagrams == datagrams)
        // A length running past the end takes what is left.
        #expect(FuzzInput([9, 0, 10, 1, 2]).datagrams == [[1, 2]])
    }
}
