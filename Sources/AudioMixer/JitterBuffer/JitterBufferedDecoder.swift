import ChorusCore

/// One sender's receive chain for the mixer: `AdaptiveJitterBuffer` + `AudioDecoder` + a small
/// PCM queue, turning RTP payloads into exactly one tick (960 samples) of 48 kHz mono per call.
///
/// Driven on the room's queue: `insert(…)` for each audio packet, `nextFrame(now:into:)` once per
/// 20 ms tick with the tick's time. Packets of any Opus duration work: a 60 ms packet is decoded
/// once and served over three ticks, two 10 ms packets are decoded for one tick; the jitter
/// buffer is told the playout time of each packet's first sample so its delay accounting stays
/// exact. Undecodable payloads are counted in `decodeErrors` and concealed.
public struct JitterBufferedDecoder: Sendable {
    /// What a frame handed to the mixer contains, so silent senders can be skipped cheaply.
    public enum FrameKind: Equatable, Sendable {
        /// Decoded (or FEC-recovered) audio.
        case audio
        /// At least part of the frame is packet loss concealment or inserted playout stretch.
        case concealed
        /// Comfort noise: the sender paused (DTX) or stalled and the caller asked for its
        /// background noise (libopus's concealment fading into its internal CNG).
        case comfortNoise
        /// Silence: not started, DTX, or a stall. The samples are zero.
        case silence
        /// Played without decoding (`decode: false`): the timeline moved on, the samples are
        /// zero, and the decoder restarts cleanly on the next decoded packet.
        case skipped
        /// One whole packet, held undecoded (`deferDecode`): `relayablePayload` is that packet,
        /// the samples are not written. `decodeDeferred(into:)` decodes it within the same
        /// tick if its samples turn out to be needed; otherwise the decoder restarts cleanly on
        /// the next decoded packet.
        case undecoded
    }

    public private(set) var jitterBuffer: AdaptiveJitterBuffer
    public let decoder: any AudioDecoder
    /// Payloads the decoder rejected (they are concealed instead).
    public private(set) var decodeErrors = 0
    /// The payload of the last tick when that tick was exactly one received packet, decoded
    /// whole (20 ms, nothing concealed, recovered or left over from a longer packet); nil
    /// otherwise. The room forwards it unchanged to a listener whose mix is this one sender
    /// alone, instead of re-encoding what it just decoded (see `Room.send`).
    public private(set) var relayablePayload: [UInt8]?
    /// Whether `nextFrame` keeps what it played in `playout` (a per-participant recording).
    public var capturesPlayout = false {
        didSet { playout.removeAll() }
    }
    /// What the last `nextFrame` played of the sender's timeline, in order, when
    /// `capturesPlayout`: the sender's own packets and the gaps between them (loss, DTX, the
    /// buffer's stretches), so a recording of them keeps the room's timeline without decoding.
    public private(set) var playout: [PlayedAudio] = []

    /// One stretch of a sender's timeline as it was played.
    public enum PlayedAudio: Equatable, Sendable {
        /// The sender's packet, lasting `samples` (from its TOC).
        case packet([UInt8], samples: Int)
        /// Nothing of the sender's for `samples`: a loss, a DTX pause, an inserted frame.
        case gap(samples: Int)
    }

    private var queue: [Int16]
    private var queued = 0
    /// The queue's length, kept apart so that a silent tick need not read the array's header.
    private let capacity: Int
    /// Silence at the head of the queue not yet written into it; when nonzero it is all that
    /// is queued. A quiet member's tick is silence that `nextFrame(into: inout)` drops unread:
    /// writing it (and reading the queue's header to place it) touched two cold cache lines per
    /// member per tick, 4 % of a 3,000-member room's server CPU. It is written before anything
    /// else goes into the queue, and before the queue is read.
    private var unwrittenSilence = 0
    /// What the samples left in the queue are (the rest of a 40 or 60 ms packet is `.audio`):
    /// a tick served from them alone is of that kind, not `.silence`.
    private var queuedKind = FrameKind.silence
    private let tick: Int
    /// Packets were skipped: the decoder's state is stale, reset it before the next decode.
    private var decoderIsStale = false
    /// This tick's packet while it is held undecoded (`.undecoded`), until `decodeDeferred`.
    private var deferredPayload: [UInt8]?
    /// The last tick's packet when it was played without decoding (skipped, or held and never
    /// decoded): the stale decoder is primed with it before the next decode. A decoder reset
    /// mid-stream decodes its first packet against an empty history (SILK's pitch and gain
    /// state, CELT's band energies are coded relative to the previous frame), which rang as a
    /// tone-like burst of the talker's earlier audio; one packet of history restores it.
    private var primer: [UInt8]?

    public init(decoder: any AudioDecoder, configuration: JitterBufferConfiguration = JitterBufferConfiguration()) {
        self.decoder = decoder
        var configuration = configuration
        // Asking for FEC recoveries the decoder cannot make would only skew the statistics.
        configuration.inbandFEC = configuration.inbandFEC && decoder.supportsInbandFEC
        jitterBuffer = AdaptiveJitterBuffer(configuration: configuration)
        tick = jitterBuffer.configuration.tickSamples
        // One tick still owed plus the longest packet: a decode always fits.
        capacity = tick + AudioCodecFormat.maxPacketSamples
        queue = [Int16](repeating: 0, count: capacity)
    }

    /// Hands one received audio packet to the jitter buffer, with its duration read from the
    /// payload (so 10–60 ms packets are placed correctly).
    public mutating func insert(
        sequenceNumber: UInt16, timestamp: UInt32, payload: [UInt8], arrival: MediaTime, marker: Bool = false
    ) {
        let samples = payload.withUnsafeBufferPointer { decoder.packetSamples($0) }
        jitterBuffer.insert(
            sequenceNumber: sequenceNumber, timestamp: timestamp, payload: payload, arrival: arrival,
            marker: marker, samples: samples)
    }

    /// Fills `pcm` (at least one tick long; only the first tick is written) with the audio
    /// to play at `now`. With `comfortNoise`, DTX stretches are filled with the sender's
    /// background noise instead of zeros: the room asks for it only for mixed speakers, so a
    /// speaker pausing mid-sentence does not punch digital silence into the mix (noise
    /// pumping), while the cost stays bounded by the number of speakers, not the room's size.
    ///
    /// With `decode: false` the tick is played without decoding (zeros, `.skipped`): the room
    /// does this for participants whose client-reported level says they are quiet, or who are
    /// muted, so a large room decodes only its talkers. The jitter buffer keeps its timeline.
    ///
    /// With `deferDecode` (and `decode`), a tick that is exactly one whole packet is not decoded
    /// yet: the result is `.undecoded` and the packet is `relayablePayload`. A room whose mixes
    /// need no samples of this sender (it is the only one talking, and its packet is relayed)
    /// then runs no decoder for it; one that needs them calls `decodeDeferred(into:)`.
    /// `heldIsQuiet` says whether the sender's own level calls that packet quiet: the buffer
    /// may then drop a frame to shed excess delay, as it does after decoding a quiet one.
    public mutating func nextFrame(
        now: MediaTime, into pcm: UnsafeMutableBufferPointer<Int16>, comfortNoise: Bool = false, decode: Bool = true,
        deferDecode: Bool = false, heldIsQuiet: Bool = false
    ) -> FrameKind {
        let kind = advance(now: now, comfortNoise: comfortNoise, decode: decode, deferDecode: deferDecode,
                           heldIsQuiet: heldIsQuiet)
        if kind != .undecoded { emitTick(into: pcm) }
        return kind
    }

    /// `nextFrame(now:into:…)` for a caller that takes `.silence` and `.skipped` as zeros
    /// without reading `pcm`: such a tick leaves `pcm` untouched (not even zeroed). A room's
    /// quiet members are most of a big room, and writing 1,920 bytes of zeros into each of
    /// their buffers every tick, out of cache, was 3 % of a 3,000-member room's CPU.
    public mutating func nextFrame(
        now: MediaTime, into pcm: inout [Int16], comfortNoise: Bool = false, decode: Bool = true,
        deferDecode: Bool = false, heldIsQuiet: Bool = false
    ) -> FrameKind {
        let kind = advance(now: now, comfortNoise: comfortNoise, decode: decode, deferDecode: deferDecode,
                           heldIsQuiet: heldIsQuiet)
        switch kind {
        case .undecoded: break
        case .silence, .skipped: discardTick()
        case .audio, .concealed, .comfortNoise: pcm.withUnsafeMutableBufferPointer { emitTick(into: $0) }
        }
        return kind
    }

    /// Pops and renders this tick's audio into the queue (or holds it, `.undecoded`).
    private mutating func advance(now: MediaTime, comfortNoise: Bool, decode: Bool, deferDecode: Bool,
                                  heldIsQuiet: Bool) -> FrameKind {
        var kind = queued > 0 ? queuedKind : .silence
        var rounds = 0
        var single: [UInt8]?
        let startedEmpty = queued == 0
        relayablePayload = nil
        if let held = deferredPayload {  // last tick's packet was never decoded
            deferredPayload = nil
            decoderIsStale = true
            primer = held
        }
        if capturesPlayout { playout.removeAll(keepingCapacity: true) }
        var popped: JitterBufferOutput?
        if deferDecode, decode, startedEmpty {
            let output = jitterBuffer.pop(now: now)
            if case .frame(let payload) = output, payload.withUnsafeBufferPointer({ decoder.packetSamples($0) }) == tick {
                if capturesPlayout { capture(output) }
                deferredPayload = payload
                relayablePayload = payload
                jitterBuffer.sourceIsQuiet = heldIsQuiet
                return .undecoded
            }
            popped = output
        }
        // Each pop yields ≥ 120 samples, so 16 rounds always fill a tick; the bound only guards
        // against a decoder that returns nothing.
        while queued < tick, rounds < 16 {
            rounds += 1
            let queuedNs = UInt64(queued) * 1_000_000_000 / UInt64(AudioCodecFormat.sampleRate)
            let output = popped ?? jitterBuffer.pop(now: now.adding(nanoseconds: queuedNs))
            popped = nil
            if case .notStarted = output { break }
            if capturesPlayout { capture(output) }
            let produced = decode ? render(output, comfortNoise: comfortNoise) : skip(output)
            kind = Self.merge(kind, produced)
            queuedKind = produced
            if case .frame(let payload) = output, produced == .audio { single = payload }
        }
        if startedEmpty, rounds == 1, queued == tick { relayablePayload = single }
        return kind
    }

    /// Decodes the packet that this tick's `nextFrame` held (`.undecoded`) into `pcm`, as
    /// `nextFrame` would have: `.audio`, or `.concealed` when the decoder rejects it (then it
    /// is not relayable either). `.silence` (nothing written) when no packet is held.
    public mutating func decodeDeferred(into pcm: UnsafeMutableBufferPointer<Int16>) -> FrameKind {
        guard let payload = deferredPayload else { return .silence }
        deferredPayload = nil
        var kind = FrameKind.audio
        if !decodeAppending(payload, fecSamples: nil) {
            decodeErrors += 1
            concealAppending(tick)
            relayablePayload = nil
            kind = .concealed
        }
        emitTick(into: pcm)
        return kind
    }

    /// Drops the first tick of the queue unread and keeps the rest (as `emitTick` would).
    private mutating func discardTick() {
        if unwrittenSilence > 0 {
            unwrittenSilence = max(0, unwrittenSilence - tick)
            queued = unwrittenSilence
            return
        }
        let rest = queued - tick
        if rest > 0 {
            queue.withUnsafeMutableBufferPointer { buffer in
                buffer.baseAddress.map { $0.update(from: $0 + tick, count: rest) }
            }
        }
        queued = max(0, rest)
    }

    /// Hands the first tick of the queue to `pcm` (padded with silence) and keeps the rest.
    private mutating func emitTick(into pcm: UnsafeMutableBufferPointer<Int16>) {
        if queued < tick { appendSilence(tick - queued) }
        writeUnwrittenSilence()
        let count = min(tick, pcm.count)
        queue.withUnsafeMutableBufferPointer { buffer in
            guard let source = buffer.baseAddress, let destination = pcm.baseAddress else { return }
            destination.update(from: source, count: count)
            // Keep what is left of a long packet for the next ticks (at most 120 ms).
            let rest = queued - tick
            if rest > 0 { source.update(from: source + tick, count: rest) }
        }
        queued = max(0, queued - tick)
    }

    /// Decodes or synthesizes one jitter buffer output onto the end of the queue.
    private mutating func render(_ output: JitterBufferOutput, comfortNoise: Bool) -> FrameKind {
        switch output {
        case .frame(let payload):
            if decodeAppending(payload, fecSamples: nil) { return .audio }
            decodeErrors += 1
            concealAppending(jitterBuffer.packetSamples)
            return .concealed
        case .recoverWithFEC(let nextPayload, let samples):
            if decoder.supportsInbandFEC, decodeAppending(nextPayload, fecSamples: samples) { return .audio }
            concealAppending(samples)
            return .concealed
        case .conceal(let samples):
            concealAppending(samples)
            return .concealed
        case .dtx(let samples) where comfortNoise && jitterBuffer.statistics.packetsReceived > 0,
             .silence(let samples) where comfortNoise && jitterBuffer.statistics.packetsReceived > 0:
            // Asked to conceal during a pause, libopus fades its extrapolation into comfort
            // noise shaped by the last frames (SILK's CNG), and keeps that noise going. Browsers
            // in DTX send nothing but a noise update every 400 ms, so a pause cannot be told from
            // a stall when it starts: both get the sender's background, as NetEq plays it.
            concealAppending(samples)
            return .comfortNoise
        case .silence(let samples), .dtx(let samples):
            appendSilence(samples)
            return .silence
        case .notStarted:
            return .silence
        }
    }

    /// Notes one jitter buffer output in `playout`. A payload whose duration cannot be read
    /// (not a valid Opus packet) is a gap of the buffer's packet length, as it is concealed.
    private mutating func capture(_ output: JitterBufferOutput) {
        switch output {
        case .frame(let payload):
            if let samples = payload.withUnsafeBufferPointer({ decoder.packetSamples($0) }), samples > 0 {
                playout.append(.packet(payload, samples: samples))
            } else {
                playout.append(.gap(samples: jitterBuffer.packetSamples))
            }
        case .recoverWithFEC(_, let samples), .conceal(let samples), .silence(let samples), .dtx(let samples):
            playout.append(.gap(samples: samples))
        case .notStarted:
            break
        }
    }

    /// Plays one jitter buffer output as zeros without touching the decoder.
    private mutating func skip(_ output: JitterBufferOutput) -> FrameKind {
        let samples: Int
        switch output {
        case .frame(let payload):
            samples = payload.withUnsafeBufferPointer { decoder.packetSamples($0) } ?? jitterBuffer.packetSamples
            primer = payload
        case .recoverWithFEC(_, let count), .conceal(let count), .silence(let count), .dtx(let count):
            samples = count
        case .notStarted:
            return .silence
        }
        appendSilence(samples)
        decoderIsStale = true
        // Nobody hears this audio now: dropping a frame of it to shed delay is inaudible.
        jitterBuffer.sourceIsQuiet = true
        return .skipped
    }

    private mutating func decodeAppending(_ payload: [UInt8], fecSamples: Int?) -> Bool {
        if decoderIsStale {
            decoder.reset()
            decoderIsStale = false
            // The primer's samples land where this payload's go, and are overwritten by them:
            // only the decoder's history of it is kept.
            if let primer { _ = decodeAtQueueEnd(primer, fecSamples: nil) }
            primer = nil
        }
        let start = queued
        guard let written = decodeAtQueueEnd(payload, fecSamples: fecSamples), written > 0 else { return false }
        jitterBuffer.sourceIsQuiet = Self.isQuiet(queue, from: start, count: written)
        queued += written
        return true
    }

    /// Decodes `payload` (or its FEC for the `fecSamples` before it) into the free end of the
    /// queue without counting it as queued; the samples written, nil when the decoder refuses.
    private mutating func decodeAtQueueEnd(_ payload: [UInt8], fecSamples: Int?) -> Int? {
        writeUnwrittenSilence()
        let decoder = decoder
        let start = queued
        return queue.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return nil }
            let free = UnsafeMutableBufferPointer(start: base + start, count: buffer.count - start)
            return payload.withUnsafeBufferPointer { input in
                if let fecSamples { return try? decoder.decodeFEC(input, samples: fecSamples, into: free) }
                return try? decoder.decode(input, into: free)
            }
        }
    }

    private mutating func concealAppending(_ samples: Int) {
        writeUnwrittenSilence()
        let decoder = decoder
        let start = queued
        let written: Int = queue.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return 0 }
            let free = UnsafeMutableBufferPointer(start: base + start, count: buffer.count - start)
            return (try? decoder.conceal(samples: samples, into: free)) ?? 0
        }
        if written > 0 { queued += written } else { appendSilence(samples) }
    }

    private mutating func appendSilence(_ samples: Int) {
        let count = max(0, min(samples, capacity - queued))
        if queued == unwrittenSilence {  // nothing but silence queued: note it, write it later
            unwrittenSilence += count
            queued += count
            return
        }
        let start = queued
        queue.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.map { ($0 + start).update(repeating: 0, count: count) }
        }
        queued += count
    }

    /// Writes the silence `appendSilence` only noted (see `unwrittenSilence`).
    private mutating func writeUnwrittenSilence() {
        guard unwrittenSilence > 0 else { return }
        let count = unwrittenSilence
        queue.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.map { $0.update(repeating: 0, count: count) } }
        unwrittenSilence = 0
    }

    /// Peak below about -50 dBFS: silence, comfort noise, a breath. A peak check is enough
    /// and cheaper than a level measure.
    private static func isQuiet(_ samples: [Int16], from start: Int, count: Int) -> Bool {
        samples.withUnsafeBufferPointer { buffer in
            AudioLevel.peak(of: UnsafeBufferPointer(rebasing: buffer[start..<min(start + count, buffer.count)])) < 100
        }
    }

    private static func merge(_ current: FrameKind, _ next: FrameKind) -> FrameKind {
        if current == .concealed || next == .concealed { return .concealed }
        if current == .audio || next == .audio { return .audio }
        if current == .comfortNoise || next == .comfortNoise { return .comfortNoise }
        if current == .skipped || next == .skipped { return .skipped }
        return .silence
    }
}
