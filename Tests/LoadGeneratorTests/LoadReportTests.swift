import Foundation
import Testing

@testable import LoadGenerator

#if canImport(FoundationXML)
import FoundationXML
#endif

/// The load report's outputs: results.json must come back as the same results (runs are
/// compared from it), report.html must render every run shape without NaN or injected markup,
/// and the terminal table must carry the verdict and the figures.
@Suite("Load generator: summary table, results.json, report.html")
struct LoadReportTests {
    /// A typical finished run; `samples` and the other fields are overridden per test.
    static func results(samples: [LoadResults.Sample]? = nil, errors: [String] = [],
                        passed: Bool = true) -> LoadResults {
        let ramp = (0..<12).map { (second: Int) -> LoadResults.Sample in
            let time = Double(second)
            let latency: Double = second < 2 ? 0 : 80 + time
            let serverCPU: Double? = second == 3 ? nil : 0.1 * time
            return LoadResults.Sample(
                second: time, established: min(10, second * 2), audioPacketsReceived: 500 + second,
                audioLossPercent: second == 4 ? 1.5 : 0.25, latencyMedianMs: latency,
                serverCPUCores: serverCPU, serverMemoryMB: 60 + time, generatorCPUCores: 0.05 * time)
        }
        return LoadResults(
            scenario: .init(target: "chorus", url: "http://127.0.0.1:8080/?a=1&b=2", rooms: 2, participantsPerRoom: 5,
                            talkersPerRoom: 1, video: false, slots: 0, durationSeconds: 10, rampUpPerSecond: 20),
            startedAt: Date(timeIntervalSince1970: 1_735_787_045), participants: 10, joined: 10, established: 10,
            joinTime: .init([110, 120, 130, 300]), listenersWithAudio: 10, audioPacketsReceived: 9_950,
            audioPacketsExpected: 10_000, audioLossPercent: 0.5, audioJitter: .init([1.2, 1.5, 3.4]),
            mouthToEar: .init([70, 80, 90, 120, 150]), videoFramesReceived: 0, videoPacketsReceived: 0,
            videoSubscribers: 0, subscribersWithVideo: 0, videoLossPercent: 0,
            serverCPUCores: 1.23, serverMemoryMB: 85.4, generatorCPUCores: 0.45,
            serverCPUSecondsPerParticipantSecond: 0.123, samples: samples ?? ramp, errors: errors, passed: passed)
    }

    /// A sample with everything zero and the server's CPU unknown: the worst case for scaling.
    static let zeroSample = LoadResults.Sample(
        second: 0, established: 0, audioPacketsReceived: 0, audioLossPercent: 0, latencyMedianMs: 0,
        serverCPUCores: nil, serverMemoryMB: nil, generatorCPUCores: 0)

    /// The checks every rendered page must pass: three charts, no non-finite number printed,
    /// and (where XMLParser exists) well-formed markup.
    static func expectSound(_ html: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(html.components(separatedBy: "<svg").count - 1 == 3, sourceLocation: sourceLocation)
        for bad in ["NaN", "nan", "inf", "Inf"] {
            #expect(!html.contains(bad), "found \(bad)", sourceLocation: sourceLocation)
        }
        #expect(parsesAsXML(html), sourceLocation: sourceLocation)
    }

    /// Whether the page parses as XML, which catches unbalanced tags and unescaped text.
    static func parsesAsXML(_ html: String) -> Bool {
        #if canImport(FoundationXML) || canImport(Darwin)
        return XMLParser(data: Data(html.utf8)).parse()
        #else
        return true
        #endif
    }

    @Test func jsonRoundTripsToEqualResults() throws {
        let original = Self.results(samples: Self.results().samples + [Self.zeroSample], errors: ["join 3: HTTP 503"])
        let data = try LoadReport.json(original)
        let decoded = try LoadReport.decode(data)
        #expect(decoded == original)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains("\"startedAt\" : \"2025-01-02T03:04:05Z\""))
        #expect(text.contains("http://127.0.0.1:8080/?a=1&b=2"))  // slashes left readable
        // Sorted keys: "audioJitter" comes before "scenario" even though declared after it.
        let jitter = try #require(text.range(of: "\"audioJitter\""))
        let scenario = try #require(text.range(of: "\"scenario\""))
        #expect(jitter.lowerBound < scenario.lowerBound)
    }

    /// One non-finite figure must not cost the whole results file.
    @Test func jsonKeepsNonFiniteFigures() throws {
        var results = Self.results()
        results.serverCPUSecondsPerParticipantSecond = .infinity
        let decoded = try LoadReport.decode(try LoadReport.json(results))
        #expect(decoded.serverCPUSecondsPerParticipantSecond == .infinity)
        #expect(decoded == results)
    }

    @Test func htmlHasThreeChartsAndParses() {
        let html = LoadReport.html(Self.results())
        Self.expectSound(html)
        #expect(html.contains("<polyline"))
        #expect(html.contains("server cores") && html.contains("generator cores"))  // legend, 2 series
        #expect(html.contains("<td>0.50 % (9950 of 10000 packets received)</td>"))
        #expect(html.contains("&amp;b=2"))
        #expect(!html.contains("no data"))
    }

    @Test func htmlEscapesErrorText() {
        let hostile = "<script>alert('x')</script> & \"quoted\" \u{1B}[31m"
        let html = LoadReport.html(Self.results(errors: [hostile], passed: false))
        Self.expectSound(html)
        #expect(!html.contains("<script"))
        #expect(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;quoted&quot;"))
        #expect(!html.contains("\u{1B}"))
        #expect(html.contains("class=\"verdict fail\">FAIL"))
    }

    @Test func htmlRendersWithoutSamples() {
        let html = LoadReport.html(Self.results(samples: []))
        Self.expectSound(html)
        #expect(html.components(separatedBy: "no data").count - 1 == 3)
        #expect(!html.contains("<polyline") && !html.contains("<circle"))
    }

    /// A single sample has no x span; it must still show up, as a dot.
    @Test func htmlRendersASingleSample() {
        let single = LoadResults.Sample(second: 1, established: 4, audioPacketsReceived: 200, audioLossPercent: 2,
                                        latencyMedianMs: 95, serverCPUCores: 0.3, serverMemoryMB: 70,
                                        generatorCPUCores: 0.1)
        let html = LoadReport.html(Self.results(samples: [single]))
        Self.expectSound(html)
        #expect(html.components(separatedBy: "<circle").count - 1 == 4)  // loss, latency, 2 × CPU
        #expect(!html.contains("no data"))
    }

    /// All-zero series and unknown server CPU: zero-height axes are where NaN comes from.
    @Test func htmlRendersAllZeroAndUnknownCPU() {
        let zeros = (0..<5).map { second -> LoadResults.Sample in
            var sample = Self.zeroSample
            sample.second = Double(second)
            return sample
        }
        var results = Self.results(samples: zeros)
        results.serverCPUCores = nil
        results.serverMemoryMB = nil
        results.serverCPUSecondsPerParticipantSecond = nil
        let html = LoadReport.html(results)
        Self.expectSound(html)
        #expect(html.contains("<td>CPU unknown, memory unknown</td>"))
        #expect(html.contains("no data"))  // latency chart: every median is "none heard"
    }

    @Test func axesNeverCollapse() {
        for values in [[], [0.0], [0, 0, 0], [5.0], [-2.0], [.nan, .infinity], [0.001, 0.0012], [1e12]] {
            let axis = ChartAxis(covering: values)
            #expect(axis.upper > axis.lower && axis.step > 0, "\(values)")
            #expect(axis.ticks.count >= 2 && axis.ticks.count <= 21, "\(values)")
            #expect(axis.ticks.allSatisfy(\.isFinite) && axis.fraction(axis.upper) == 1, "\(values)")
        }
        let rounded = ChartAxis(covering: [0, 7.3])
        #expect(rounded.lower == 0 && rounded.upper == 8 && rounded.step == 2)
        #expect(ChartAxis(covering: [0, 0.3]).label(0.1) == "0.1")
    }

    @Test func summaryTableShowsVerdictAndFigures() {
        let table = LoadReport.summaryTable(Self.results())
        let rows: [(String, String)] = [
            ("Participants", "10 joined, 10 established of 10"), ("Join time", "p50 130 ms  p95 300 ms  (n = 4)"),
            ("Listeners with audio", "10 of 10"), ("Audio loss", "0.50 % (9950 of 10000 packets received)"),
            ("Audio jitter", "p50 1.5 ms  p95 3.4 ms"), ("Mouth-to-ear", "p50 90 ms  p95 150 ms  p99 150 ms"),
            ("Video received", "no video in this run"), ("Server", "1.23 cores, 85 MB peak"), ("Generator CPU", "0.45 cores"),
            ("Server CPU-s / participant-s", "0.1230"),
        ]
        let lines = table.split(separator: "\n").map(String.init)
        for (label, figure) in rows {
            let line = lines.first { $0.hasPrefix("│ " + label + " ") }
            #expect(line?.contains(figure) == true, "\(label): \(line ?? "no row")")
        }
        #expect(table.contains("PASS") && table.contains("2 room(s) × 5 participants"))

        var video = Self.results()
        video.scenario.video = true
        video.scenario.slots = 2
        (video.videoSubscribers, video.subscribersWithVideo, video.videoFramesReceived, video.videoLossPercent) =
            (10, 9, 2_700, 0.25)
        let videoTable = LoadReport.summaryTable(video)
        #expect(videoTable.contains("9 of 10 subscribers, 2700 frames, loss 0.25 %"))
        #expect(videoTable.contains("audio + video (2 slots)"))
        #expect(table.contains("2025-01-02T03:04:05Z") && table.contains("http://127.0.0.1:8080/?a=1&b=2"))
        #expect(!table.contains("FAIL"))
        let widths = Set(table.split(separator: "\n").map(\.count))
        #expect(widths == [LoadReport.tableWidth])  // every line the same width: the box is aligned
        #expect(LoadReport.tableWidth <= 100)
    }

    @Test func summaryTableShowsFailureAndFirstErrors() {
        let errors = ["join 7 failed: HTTP 503", "2 listeners received no audio, e.g. user-3\nsecond line",
                      "third", "fourth " + String(repeating: "x", count: 200), "fifth"]
        let table = LoadReport.summaryTable(Self.results(errors: errors, passed: false))
        #expect(table.contains("FAIL · 5 error(s)"))
        #expect(table.contains("join 7 failed: HTTP 503") && table.contains("e.g. user-3 second line"))
        #expect(table.contains("third") && !table.contains("fourth") && table.contains("2 more in results.json"))
        #expect(!table.contains("PASS"))
        #expect(Set(table.split(separator: "\n").map(\.count)) == [LoadReport.tableWidth])
    }

    /// An empty run (nothing joined) reads as "none measured", not as a perfect 0 ms.
    @Test func summaryTableMarksEmptyDistributions() {
        var results = Self.results(samples: [], passed: false)
        results.joinTime = .init([])
        results.mouthToEar = .init([])
        results.serverCPUSecondsPerParticipantSecond = nil
        let table = LoadReport.summaryTable(results)
        #expect(table.components(separatedBy: "none measured").count - 1 == 2)
        #expect(table.contains("unknown") && !table.contains("p50 0"))
    }

    @Test func writeCreatesDirectoryAndBothFiles() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("load-report-\(UUID().uuidString)/nested")
        defer { try? FileManager.default.removeItem(at: directory.deletingLastPathComponent()) }
        let results = Self.results()
        let urls = try LoadReport.write(results, to: directory)
        #expect(urls.map(\.lastPathComponent) == ["results.json", "report.html"])
        #expect(try LoadReport.decode(Data(contentsOf: urls[0])) == results)
        #expect(try String(contentsOf: urls[1], encoding: .utf8) == LoadReport.html(results))
    }
}
