/// The mixing arithmetic of one tick: load the mixed speakers' decoded frames, then render the
/// full mix and each "minus one" mix through a `SoftLimiter` into 16-bit PCM.
///
/// Driven per tick: `beginFrame()`, `addSource(_:)` once per mixed speaker (16-bit or normalised
/// `Float`, 48 kHz mono, 960 samples: shorter frames are zero-padded, longer ones truncated),
/// then `renderFullMix` and `renderMix(excluding:)` as the `MixPlan` asks. Sources are summed in
/// `Float` as they are loaded, so the full mix costs one limiter pass and each minus-one mix is
/// `sum − source` (exact for 16-bit input: every value is a multiple of 2^-15 well inside
/// `Float`'s 24-bit mantissa), whatever the number of speakers.
///
/// All buffers are allocated once, in `init`; the inner loops run over unsafe buffer pointers
/// (measured on this toolchain: array indexing in these loops costs 45–130 µs per mix, unsafe
/// pointers 1.5–6 µs). Output goes to
/// caller-provided buffers. `Float` input is sanitised (non-finite → 0, clamped to ±8 full
/// scale), so decoder garbage cannot poison the sum or the limiter.
public struct AudioMixerCore: Sendable {
    /// Samples per frame: 20 ms at 48 kHz, mono.
    public static let frameLength = 960

    /// How many sources one frame can hold.
    public let maximumSources: Int
    /// Sources loaded since `beginFrame()`.
    public private(set) var sourceCount = 0
    /// Rows of `frameLength` floats: [0] the sum, [1] scratch, [2...] the sources.
    private var workspace: [Float]

    public init(maximumSources: Int) {
        self.maximumSources = max(0, maximumSources)
        workspace = [Float](repeating: 0, count: (2 + self.maximumSources) * Self.frameLength)
    }

    /// Starts a new frame: no sources, a silent sum.
    public mutating func beginFrame() {
        sourceCount = 0
        workspace.withUnsafeMutableBufferPointer { all in
            guard let base = all.baseAddress else { return }
            base.update(repeating: 0, count: Self.frameLength)
        }
    }

    /// Adds a 16-bit source (full scale 32768); returns its index, nil when the frame is full.
    @discardableResult
    public mutating func addSource(_ samples: UnsafeBufferPointer<Int16>) -> Int? {
        loadSource { row in
            let count = min(samples.count, Self.frameLength)
            let scale = 1 / AudioLevel.int16FullScale
            for index in 0..<count { row[index] = Float(samples[index]) * scale }
            return count
        }
    }

    /// Adds a normalised `Float` source (full scale 1.0); returns its index, nil when full.
    @discardableResult
    public mutating func addSource(_ samples: UnsafeBufferPointer<Float>) -> Int? {
        loadSource { row in
            let count = min(samples.count, Self.frameLength)
            for index in 0..<count {
                let value = samples[index]
                row[index] = value.isFinite ? min(8, max(-8, value)) : 0
            }
            return count
        }
    }

    /// Convenience over an array of 16-bit samples.
    @discardableResult
    public mutating func addSource(_ samples: [Int16]) -> Int? {
        samples.withUnsafeBufferPointer { addSource($0) }
    }

    /// Convenience over an array of `Float` samples.
    @discardableResult
    public mutating func addSource(_ samples: [Float]) -> Int? {
        samples.withUnsafeBufferPointer { addSource($0) }
    }

    /// Renders all sources through `limiter` into `output` (up to `frameLength` samples).
    public func renderFullMix(limiter: inout SoftLimiter, into output: UnsafeMutableBufferPointer<Int16>) {
        workspace.withUnsafeBufferPointer { all in
            let sum = UnsafeBufferPointer(rebasing: all[0..<Self.frameLength])
            limiter.process(sum, into: output)
        }
    }

    /// Renders every source but `source` (its "minus one" mix) through `limiter` into `output`.
    /// An index that was not loaded this frame excludes nothing (the full mix).
    public mutating func renderMix(
        excluding source: Int, limiter: inout SoftLimiter, into output: UnsafeMutableBufferPointer<Int16>
    ) {
        guard (0..<sourceCount).contains(source) else {
            renderFullMix(limiter: &limiter, into: output)
            return
        }
        let n = Self.frameLength
        workspace.withUnsafeMutableBufferPointer { all in
            guard let base = all.baseAddress else { return }
            let sum = base, scratch = base + n, row = base + (2 + source) * n
            for index in 0..<n { scratch[index] = sum[index] - row[index] }
            limiter.process(UnsafeBufferPointer(start: scratch, count: n), into: output)
        }
    }

    /// Convenience: renders into an array, which must already hold `frameLength` samples to be
    /// filled entirely (it is not resized, so a reused array never reallocates).
    public mutating func renderMix(excluding source: Int?, limiter: inout SoftLimiter, into output: inout [Int16]) {
        output.withUnsafeMutableBufferPointer { out in
            if let source {
                renderMix(excluding: source, limiter: &limiter, into: out)
            } else {
                renderFullMix(limiter: &limiter, into: out)
            }
        }
    }

    /// Fills the next source row with `fill` (which returns how many samples it wrote), pads it
    /// with silence and adds it to the sum.
    private mutating func loadSource(_ fill: (UnsafeMutablePointer<Float>) -> Int) -> Int? {
        guard sourceCount < maximumSources else { return nil }
        let source = sourceCount
        let n = Self.frameLength
        workspace.withUnsafeMutableBufferPointer { all in
            guard let base = all.baseAddress else { return }
            let sum = base, row = base + (2 + source) * n
            let written = max(0, min(n, fill(row)))
            if written < n { (row + written).update(repeating: 0, count: n - written) }
            for index in 0..<n { sum[index] += row[index] }
        }
        sourceCount += 1
        return source
    }
}
