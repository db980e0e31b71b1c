import Foundation

/// What `chorus load` makes of one run's `LoadResults`: the table printed to the terminal, the
/// `results.json` that later runs (and Janus runs) are compared against, and a self-contained
/// `report.html` with the charts. Pure functions of the results, so a report can be rebuilt
/// from an old `results.json` at any time.
public enum LoadReport {
    /// Total width of the summary table in columns: wide enough for the longest figure line,
    /// narrow enough for a split terminal.
    static let tableWidth = 92

    // MARK: - Terminal

    /// The run at a glance, as an aligned box-drawn table: scenario, figures, PASS or FAIL and
    /// the first errors. Long text (URL, errors) is cut with "…" so the box never breaks.
    public static func summaryTable(_ results: LoadResults) -> String {
        let rows = summaryRows(results)
        let labelWidth = rows.map(\.label.count).max() ?? 0
        let valueWidth = tableWidth - labelWidth - 7
        let full = tableWidth - 4
        func line(_ text: String) -> String { "│ " + fit(text, full) + " │" }
        func rule(_ left: String, _ middle: String, _ right: String) -> String {
            left + String(repeating: "─", count: labelWidth + 2) + middle
                + String(repeating: "─", count: valueWidth + 2) + right
        }
        var lines = [rule("┌", "─", "┐")]
        lines.append(line("chorus load · target \(results.scenario.target) · \(results.scenario.url)"))
        lines.append(line(scenarioLine(results.scenario)))
        lines.append(line("started \(timestamp(results.startedAt))"))
        lines.append(rule("├", "┬", "┤"))
        for row in rows {
            lines.append("│ " + fit(row.label, labelWidth) + " │ " + fit(row.value, valueWidth) + " │")
        }
        lines.append(rule("├", "┴", "┤"))
        lines.append(line(verdict(results)))
        for error in results.errors.prefix(3) { lines.append(line("  " + oneLine(error))) }
        if results.errors.count > 3 { lines.append(line("  … \(results.errors.count - 3) more in results.json")) }
        lines.append(rule("└", "─", "┘"))
        return lines.joined(separator: "\n")
    }

    /// "PASS", or "FAIL" with the error count, for the table's last section.
    static func verdict(_ results: LoadResults) -> String {
        guard !results.passed else { return results.errors.isEmpty ? "PASS" : "PASS (with notes below)" }
        return results.errors.isEmpty ? "FAIL" : "FAIL · \(results.errors.count) error(s), first:"
    }

    /// The scenario in one sentence, e.g. "2 rooms × 5 participants (1 talker each), audio
    /// only, 10 s, ramp-up 20/s".
    static func scenarioLine(_ scenario: LoadResults.Scenario) -> String {
        let media = scenario.video ? "audio + video (\(scenario.slots) slots)" : "audio only"
        return "\(scenario.rooms) room(s) × \(scenario.participantsPerRoom) participants"
            + " (\(scenario.talkersPerRoom) talker(s) each), \(media), \(number(scenario.durationSeconds, 0)) s,"
            + " ramp-up \(number(scenario.rampUpPerSecond, 1))/s"
    }

    /// The figures shared by the terminal table and the HTML summary, so the two never
    /// disagree about what a run measured.
    static func summaryRows(_ results: LoadResults) -> [(label: String, value: String)] {
        let cpuPerParticipant = results.serverCPUSecondsPerParticipantSecond.map { number($0, 4) } ?? "unknown"
        return [
            ("Participants", "\(results.joined) joined, \(results.established) established of \(results.participants)"),
            ("Join time", percentiles(results.joinTime, [50, 95])),
            ("Listeners with audio", "\(results.listenersWithAudio) of \(results.participants)"),
            ("Silent participants in DTX", "\(results.participantsInDTX)"),
            ("Audio loss", "\(number(results.audioLossPercent, 2)) % (\(results.audioPacketsReceived) of "
                + "\(results.audioPacketsExpected) packets received)"),
            ("Audio short of stream timing", results.audioRateLossPercent.map { "\(number($0, 2)) % short" } ?? "not measured"),
            ("Audio jitter", percentiles(results.audioJitter, [50, 95])),
            ("Mouth-to-ear", percentiles(results.mouthToEar, [50, 95, 99])),
            ("Onsets detected", onsets(results)),
        ] + holes(results) + [
            ("Generator tick lag", results.generatorTickLag.map { percentiles($0, [95]) + "  max \(milliseconds($0.max))" }
                ?? "not measured"),
            ("Video received", results.scenario.video
                ? "\(results.subscribersWithVideo) of \(results.videoSubscribers) subscribers, "
                    + "\(results.videoFramesReceived) frames, loss \(number(results.videoLossPercent, 2)) %"
                : "no video in this run"),
            ("Server", "\(results.serverCPUCores.map { number($0, 2) + " cores" } ?? "CPU unknown"), "
                + (results.serverSystemCPUCores.map { number($0, 2) + " of them in the kernel, " } ?? "")
                + (results.serverMemoryMB.map { number($0, 0) + " MB peak" } ?? "memory unknown")),
            ("Generator CPU", number(results.generatorCPUCores, 2) + " cores"),
            ("Host CPU stolen by the hypervisor",
             results.hostStealPercent.map { number($0, 1) + " %" } ?? "not measured"),
            ("Server CPU-s / participant-s", cpuPerParticipant),
        ]
    }

    /// "p50 12.3 ms  p95 40 ms (n = 17)", or "none measured" when the distribution is empty
    /// (its zeros would otherwise read as perfect figures).
    static func percentiles(_ distribution: LoadResults.Distribution, _ which: [Int]) -> String {
        guard distribution.count > 0 else { return "none measured" }
        let values = which.map { percentile -> String in
            let value = percentile == 50 ? distribution.p50 : percentile == 95 ? distribution.p95 : distribution.p99
            return "p\(percentile) \(milliseconds(value))"
        }
        return values.joined(separator: "  ") + "  (n = \(distribution.count))"
    }

    // MARK: - JSON

    /// `results.json`: pretty-printed with sorted keys so two runs diff cleanly, ISO 8601
    /// dates. Non-finite numbers are written as strings rather than failing, because losing a
    /// long run's whole results file over one bad figure is worse than an odd field.
    public static func json(_ results: LoadResults) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        return try encoder.encode(results)
    }

    /// Reads a `results.json` written by `json(_:)`, with the matching date and number rules.
    /// Dates come back to the whole second: ISO 8601 as written carries no fractions.
    public static func decode(_ data: Data) throws -> LoadResults {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        return try decoder.decode(LoadResults.self, from: data)
    }

    // MARK: - HTML

    /// `report.html`: one page with no external resources or scripts (it is attached to
    /// issues and opened from disk), the scenario, the summary, the errors and three charts.
    /// Also well-formed XML, so tests and tools can parse it.
    public static func html(_ results: LoadResults) -> String {
        var page = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8"/>
            <title>Chorus load report \(escape(timestamp(results.startedAt)))</title>
            <style>\(style)</style>
            </head>
            <body>
            <h1>Chorus load report</h1>
            <p class="verdict \(results.passed ? "pass" : "fail")">\(results.passed ? "PASS" : "FAIL")</p>

            """
        page += "<h2>Scenario</h2>\n" + htmlTable(scenarioRows(results))
        page += "<h2>Summary</h2>\n" + htmlTable(summaryRows(results))
        if !results.errors.isEmpty {
            page += "<h2>Errors</h2>\n<ul class=\"errors\">\n"
            page += results.errors.map { "<li>\(escape($0))</li>\n" }.joined()
            page += "</ul>\n"
        }
        page += "<h2>Over the run</h2>\n<div class=\"charts\">\n"
        page += LoadChart.reportCharts(results.samples).map { $0.svg() }.joined()
        return page + "</div>\n</body>\n</html>\n"
    }

    /// The scenario as label/value rows for the HTML page.
    static func scenarioRows(_ results: LoadResults) -> [(label: String, value: String)] {
        let scenario = results.scenario
        return [
            ("Target", scenario.target), ("URL", scenario.url), ("Started", timestamp(results.startedAt)),
            ("Rooms", "\(scenario.rooms)"), ("Participants per room", "\(scenario.participantsPerRoom)"),
            ("Talkers per room", "\(scenario.talkersPerRoom)"),
            ("Video", scenario.video ? "yes, \(scenario.slots) slots" : "no"),
            ("Duration", number(scenario.durationSeconds, 0) + " s"),
            ("Ramp-up", number(scenario.rampUpPerSecond, 1) + " joins/s"),
        ]
    }

    /// A two-column HTML table with every cell escaped.
    static func htmlTable(_ rows: [(label: String, value: String)]) -> String {
        "<table>\n" + rows.map { "<tr><th>\(escape($0.label))</th><td>\(escape($0.value))</td></tr>\n" }.joined()
            + "</table>\n"
    }

    /// The page's whole stylesheet (no `<` or `&`, so the page stays valid XML).
    static let style = """
        body{font-family:system-ui,sans-serif;margin:2em auto;max-width:60em;color:#222}
        table{border-collapse:collapse;margin-bottom:1em}
        th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
        th{background:#f4f4f4;font-weight:600}
        .verdict{font-size:1.4em;font-weight:700}.pass{color:#1a7f37}.fail{color:#c0392b}
        .errors li{font-family:monospace;white-space:pre-wrap}
        svg{display:block;margin:1em 0;font-size:12px}
        svg .title{font-size:14px;font-weight:600}svg .grid{stroke:#e5e5e5}
        svg .frame{fill:none;stroke:#888}svg .note{fill:#888;font-style:italic}
        """

    // MARK: - Files

    /// Writes `results.json` and `report.html` into `directory` (created if missing) and
    /// returns their URLs, JSON first. Writes are atomic so an interrupted run never leaves a
    /// half-written results file behind.
    public static func write(_ results: LoadResults, to directory: URL) throws -> [URL] {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let jsonURL = directory.appendingPathComponent("results.json")
        let htmlURL = directory.appendingPathComponent("report.html")
        try json(results).write(to: jsonURL, options: .atomic)
        try Data(html(results).utf8).write(to: htmlURL, options: .atomic)
        return [jsonURL, htmlURL]
    }

    // MARK: - Text helpers

    /// Text for HTML or SVG: the five XML-special characters as references, and control
    /// characters (invalid in XML even as references) replaced, since errors may quote
    /// anything a server sent.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            case "\t", "\n", "\r": out.unicodeScalars.append(scalar)
            case _ where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
                || scalar.value == 0xFFFE || scalar.value == 0xFFFF:
                out += "\u{FFFD}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// `text` padded or cut (with "…") to exactly `width` characters, for the table columns.
    static func fit(_ text: String, _ width: Int) -> String {
        guard width > 0 else { return "" }
        let clean = oneLine(text)
        if clean.count <= width { return clean + String(repeating: " ", count: width - clean.count) }
        return String(clean.prefix(width - 1)) + "…"
    }

    /// Newlines, tabs and other controls flattened to spaces so one error is one table line.
    static func oneLine(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map {
            $0.properties.generalCategory == .control ? " " : $0
        }))
    }

    /// "detected of expected", and how many were heard twice when any were.
    static func onsets(_ results: LoadResults) -> String {
        guard let expected = results.onsetsExpected else { return "not measured" }
        let detected = "\(results.onsetsDetected ?? 0) of \(expected)"
        guard let repeated = results.onsetsRepeated, repeated > 0 else { return detected }
        return detected + ", \(repeated) heard twice"
    }

    /// A row for the holes before onsets heard twice, when there were any: in the stream's
    /// time and in arrival time (a hole in the stream only is a jump of its timestamps).
    static func holes(_ results: LoadResults) -> [(label: String, value: String)] {
        guard let holes = results.repeatedOnsetHoles, !holes.isEmpty else { return [] }
        let shown = holes.prefix(4).map { "\(number($0.streamMs, 0))/\(number($0.arrivalMs, 0))" }
        return [("Holes before them, stream/arrival", shown.joined(separator: ", ") + " ms")]
    }

    /// A fixed-decimals number, or "n/a" when it is not finite (never "nan" or "inf").
    static func number(_ value: Double, _ decimals: Int) -> String {
        value.isFinite ? String(format: "%.\(decimals)f", value) : "n/a"
    }

    /// Milliseconds with one decimal below 10 ms (jitter) and none above (latency, joins).
    static func milliseconds(_ value: Double) -> String {
        number(value, abs(value) < 10 ? 1 : 0) + " ms"
    }

    /// The run's start in ISO 8601 UTC, the same form as in `results.json`.
    static func timestamp(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }
}
