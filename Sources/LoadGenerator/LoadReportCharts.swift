import Foundation

/// A small hand-drawn SVG chart for `report.html`: one or two series on linear axes with round
/// tick labels. Written out by hand so the report stays one self-contained file with no
/// charting library and no JavaScript; every coordinate is checked finite, because one `NaN`
/// in a `points` attribute makes browsers drop the whole series silently.
struct LoadChart {
    /// How the points are drawn: `lines` for time series (gaps where a value is missing),
    /// `dots` where x is not monotonic (CPU against participants) and a line would zigzag.
    enum Style {
        case lines
        case dots
    }

    /// One plotted series; a nil (or non-finite) `y` is a gap, not a zero, so "unknown" and
    /// "nothing measured this second" never read as a good figure.
    struct Series {
        var name: String
        var color: String
        var points: [(x: Double, y: Double?)]
    }

    var title: String
    var xLabel: String
    var yLabel: String
    var style: Style
    var series: [Series]

    /// Canvas size and the margins that hold the title, legend, tick labels and axis labels.
    static let width = 640.0, height = 300.0
    static let left = 64.0, right = 20.0, top = 44.0, bottom = 48.0
    static let plotWidth = width - left - right, plotHeight = height - top - bottom

    /// The complete `<svg>` element. Axes come from the finite values only; with no values at
    /// all the frame and a "no data" note are still drawn, so the page layout never changes.
    func svg() -> String {
        let values = series.flatMap { $0.points.compactMap { point in point.y.map { (point.x, $0) } } }
            .filter { $0.0.isFinite && $0.1.isFinite }
        let xAxis = ChartAxis(covering: values.map(\.0))
        let yAxis = ChartAxis(covering: values.map(\.1))
        let size = "width=\"\(Int(Self.width))\" height=\"\(Int(Self.height))\""
        var out = "<svg xmlns=\"http://www.w3.org/2000/svg\" \(size)"
            + " viewBox=\"0 0 \(Int(Self.width)) \(Int(Self.height))\" role=\"img\""
            + " aria-label=\"\(LoadReport.escape(title))\">\n"
        out += "<title>\(LoadReport.escape(title))</title>\n"
        out += text(title, x: Self.left, y: 18, attributes: "class=\"title\"")
        out += axes(x: xAxis, y: yAxis)
        for item in series { out += draw(item, x: xAxis, y: yAxis) }
        if series.count > 1 { out += legend() }
        if values.isEmpty {
            out += text("no data", x: Self.left + Self.plotWidth / 2, y: Self.top + Self.plotHeight / 2,
                        attributes: "class=\"note\" text-anchor=\"middle\"")
        }
        return out + "</svg>\n"
    }

    /// Grid lines with tick labels on both axes, the plot frame and the two axis titles.
    private func axes(x: ChartAxis, y: ChartAxis) -> String {
        var out = ""
        let bottomEdge = Self.top + Self.plotHeight
        for tick in y.ticks {
            let py = plotY(tick, y)
            out += "<line class=\"grid\" x1=\"\(coord(Self.left))\" y1=\"\(coord(py))\""
                + " x2=\"\(coord(Self.left + Self.plotWidth))\" y2=\"\(coord(py))\"/>\n"
            out += text(y.label(tick), x: Self.left - 6, y: py + 4, attributes: "text-anchor=\"end\"")
        }
        for tick in x.ticks {
            let px = plotX(tick, x)
            out += "<line class=\"grid\" x1=\"\(coord(px))\" y1=\"\(coord(Self.top))\""
                + " x2=\"\(coord(px))\" y2=\"\(coord(bottomEdge))\"/>\n"
            out += text(x.label(tick), x: px, y: bottomEdge + 16, attributes: "text-anchor=\"middle\"")
        }
        out += "<rect class=\"frame\" x=\"\(coord(Self.left))\" y=\"\(coord(Self.top))\""
            + " width=\"\(coord(Self.plotWidth))\" height=\"\(coord(Self.plotHeight))\"/>\n"
        out += text(xLabel, x: Self.left + Self.plotWidth / 2, y: Self.height - 8,
                    attributes: "class=\"axis\" text-anchor=\"middle\"")
        let middle = coord(Self.top + Self.plotHeight / 2)
        out += "<text class=\"axis\" x=\"14\" y=\"\(middle)\" text-anchor=\"middle\""
            + " transform=\"rotate(-90 14 \(middle))\">\(LoadReport.escape(yLabel))</text>\n"
        return out
    }

    /// One series: polylines over runs of known values (a lone value gets a dot so a single
    /// sample is still visible), or one dot per point.
    private func draw(_ item: Series, x: ChartAxis, y: ChartAxis) -> String {
        var runs: [[(Double, Double)]] = [[]]
        for point in item.points {
            if let value = point.y, value.isFinite, point.x.isFinite {
                runs[runs.count - 1].append((plotX(point.x, x), plotY(value, y)))
            } else if !(runs.last?.isEmpty ?? true) {
                runs.append([])
            }
        }
        var out = ""
        for run in runs where !run.isEmpty {
            if style == .dots || run.count == 1 {
                for (px, py) in run {
                    out += "<circle cx=\"\(coord(px))\" cy=\"\(coord(py))\" r=\"2.5\" fill=\"\(item.color)\"/>\n"
                }
            } else {
                let points = run.map { "\(coord($0.0)),\(coord($0.1))" }.joined(separator: " ")
                out += "<polyline fill=\"none\" stroke=\"\(item.color)\" stroke-width=\"1.5\" points=\"\(points)\"/>\n"
            }
        }
        return out
    }

    /// A swatch and name per series, in a row between the title and the plot.
    private func legend() -> String {
        var out = "", x = Self.left
        for item in series {
            out += "<rect x=\"\(coord(x))\" y=\"26\" width=\"12\" height=\"8\" fill=\"\(item.color)\"/>\n"
            out += text(item.name, x: x + 16, y: 34, attributes: "class=\"legend\"")
            x += 16 + Double(item.name.count) * 6.5 + 18
        }
        return out
    }

    /// An escaped `<text>` element at a finite position.
    private func text(_ string: String, x: Double, y: Double, attributes: String) -> String {
        "<text x=\"\(coord(x))\" y=\"\(coord(y))\" \(attributes)>\(LoadReport.escape(string))</text>\n"
    }

    /// Data → canvas coordinates; the axes are never zero-width, so these cannot divide by 0.
    private func plotX(_ value: Double, _ axis: ChartAxis) -> Double {
        Self.left + axis.fraction(value) * Self.plotWidth
    }

    private func plotY(_ value: Double, _ axis: ChartAxis) -> Double {
        Self.top + (1 - axis.fraction(value)) * Self.plotHeight
    }

    /// One decimal is plenty at this size; the non-finite guard is the last line of defence
    /// against `NaN` reaching the SVG.
    private func coord(_ value: Double) -> String {
        value.isFinite ? String(format: "%.1f", value) : "0"
    }
}

/// A linear axis from round tick to round tick (steps of 1, 2 or 5 × 10ⁿ) covering the data
/// and zero. Empty data, a single value and all-equal (all-zero) data all get a non-zero span,
/// which is what keeps the chart free of divisions by zero.
struct ChartAxis: Equatable {
    var lower: Double
    var upper: Double
    var step: Double

    /// The axis for these values (non-finite ones ignored), always including 0 because loss,
    /// latency, cores and participants are all read against zero.
    init(covering values: [Double]) {
        let finite = values.filter(\.isFinite)
        let low = min(finite.min() ?? 0, 0)
        var high = max(finite.max() ?? 1, 0)
        if !(high > low) { high = low + 1 }
        step = Self.roundStep((high - low) / 5)
        lower = (low / step).rounded(.down) * step
        upper = (high / step).rounded(.up) * step
        if !(upper > lower) || !lower.isFinite || !upper.isFinite {
            (lower, upper, step) = (0, 1, 0.2)
        }
    }

    /// The smallest 1, 2 or 5 × 10ⁿ at least `raw`; 1 when `raw` is unusable.
    static func roundStep(_ raw: Double) -> Double {
        guard raw.isFinite, raw > 0 else { return 1 }
        let magnitude = pow(10, (log10(raw)).rounded(.down))
        let scaled = raw / magnitude
        let factor: Double = scaled <= 1 ? 1 : scaled <= 2 ? 2 : scaled <= 5 ? 5 : 10
        let step = factor * magnitude
        return step.isFinite && step > 0 ? step : 1
    }

    /// Tick values from `lower` to `upper` (capped, in case rounding ever makes many).
    var ticks: [Double] {
        let count = min(Int(((upper - lower) / step).rounded()), 20)
        return (0...max(count, 1)).map { lower + Double($0) * step }
    }

    /// Where `value` sits between `lower` (0) and `upper` (1).
    func fraction(_ value: Double) -> Double {
        let span = upper - lower
        guard span > 0, span.isFinite, value.isFinite else { return 0 }
        return (value - lower) / span
    }

    /// A tick label with as many decimals as the step needs, and never "-0".
    func label(_ value: Double) -> String {
        // The tolerance keeps log10(0.1) = -0.99999… from asking for a second decimal.
        let decimals = step >= 1 ? 0 : min(6, Int((-log10(step) - 1e-9).rounded(.up)))
        let shown = abs(value) < step / 1_000 ? 0 : value
        return String(format: "%.\(decimals)f", shown)
    }
}

extension LoadChart {
    /// The report's three charts from the per-second samples: audio loss and mouth-to-ear
    /// latency over time, and server and generator CPU against participants established (the
    /// cost curve that says how far a box scales).
    static func reportCharts(_ samples: [LoadResults.Sample]) -> [LoadChart] {
        // A latency median of 0 means no onset was heard that second (see `Sample`), so it is
        // drawn as a gap rather than as a perfect latency.
        let latency = samples.map { (x: $0.second, y: $0.latencyMedianMs > 0 ? Optional($0.latencyMedianMs) : nil) }
        return [
            LoadChart(title: "Audio loss over time", xLabel: "seconds since first join", yLabel: "loss %",
                      style: .lines, series: [
                          Series(name: "audio loss %", color: "#c0392b",
                                 points: samples.map { (x: $0.second, y: Optional($0.audioLossPercent)) }),
                      ]),
            LoadChart(title: "Mouth-to-ear latency (median per second)", xLabel: "seconds since first join",
                      yLabel: "ms", style: .lines,
                      series: [Series(name: "mouth-to-ear p50 ms", color: "#2c7fb8", points: latency)]),
            LoadChart(title: "CPU against participants established", xLabel: "participants established",
                      yLabel: "cores", style: .dots, series: [
                          Series(name: "server cores", color: "#d95f02",
                                 points: samples.map { (x: Double($0.established), y: $0.serverCPUCores) }),
                          Series(name: "generator cores", color: "#1b9e77",
                                 points: samples.map { (x: Double($0.established), y: .some($0.generatorCPUCores)) }),
                      ]),
        ]
    }
}
