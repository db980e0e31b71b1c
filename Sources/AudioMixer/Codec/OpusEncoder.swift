import ChorusCore
import COpus

/// libopus encoder for one outgoing mix: 48 kHz, mono, voice signal, `OPUS_APPLICATION_VOIP`
/// (SILK or hybrid for speech at 32 kbit/s) or CELT-only `RESTRICTED_LOWDELAY` (see `Mode`).
///
/// Owns the C state and frees it in `deinit`. Not thread-safe: one user at a time, its room's
/// serial queue (created, used and released there), which the room's actor executor guarantees;
/// every call that touches the C state runs under an `ExclusiveUseCheck`, so two threads in it
/// at once trap.
///
/// Cost on the 2-core development machine (release, 20 ms mono speech-like input, 32 kbit/s):
/// see the report of `OpusCostTests`; roughly 100 µs at complexity 0, 340 µs at 10.
///
/// `@unchecked Sendable`: owns an `OpaquePointer`; one user at a time (its room's queue), checked by `exclusive`.
public final class OpusEncoder: AudioEncoder, @unchecked Sendable {
    /// Which of libopus's coders may carry the signal.
    public enum Mode: String, Sendable, CaseIterable {
        /// `OPUS_APPLICATION_VOIP`: libopus picks SILK, hybrid or CELT; at 32 kbit/s speech is
        /// hybrid (SILK below 8 kHz, CELT above). The default.
        case voip
        /// `OPUS_APPLICATION_RESTRICTED_LOWDELAY`: CELT only. About half the encode time and
        /// 2.5 ms less look-ahead, at a measurable loss of speech quality at 32 kbit/s (see
        /// docs/PERFORMANCE.md, "CELT-only mixes").
        case celt

        var application: Int32 { self == .voip ? OPUS_APPLICATION_VOIP : OPUS_APPLICATION_RESTRICTED_LOWDELAY }
    }

    private let state: OpaquePointer
    /// The coder choice, fixed at creation (libopus cannot change it on a live encoder).
    public let mode: Mode
    private let exclusive = ExclusiveUseCheck()

    /// Target bitrate in bit/s, clamped to libopus's 6–510 kbit/s.
    public var bitrate: Int {
        didSet {
            bitrate = Self.clamp(bitrate, 6_000, 510_000)
            exclusive.run("OpusEncoder") { apply(chorus_opus_encoder_set_bitrate, bitrate) }
        }
    }
    /// 0…10; the mixer's shared encode can afford more than per-participant encoders could.
    public var complexity: Int {
        didSet {
            complexity = Self.clamp(complexity, 0, 10)
            exclusive.run("OpusEncoder") { apply(chorus_opus_encoder_set_complexity, complexity) }
        }
    }
    /// In-band FEC (LBRR). Only used by libopus when `expectedPacketLossPercent` > 0 and the
    /// bitrate leaves room for it.
    public var inbandFEC: Bool {
        didSet { exclusive.run("OpusEncoder") { apply(chorus_opus_encoder_set_inband_fec, inbandFEC ? 1 : 0) } }
    }
    /// 0…100, from receiver reports; drives how much FEC libopus spends.
    public var expectedPacketLossPercent: Int {
        didSet {
            expectedPacketLossPercent = Self.clamp(expectedPacketLossPercent, 0, 100)
            exclusive.run("OpusEncoder") { apply(chorus_opus_encoder_set_packet_loss_perc, expectedPacketLossPercent) }
        }
    }
    /// Discontinuous transmission: during silence `encode` returns ≤ 2-byte frames that need
    /// not be sent (RFC 7587 §3.1.3), with a comfort-noise update every 400 ms.
    public var dtx: Bool {
        didSet { exclusive.run("OpusEncoder") { apply(chorus_opus_encoder_set_dtx, dtx ? 1 : 0) } }
    }

    /// Samples of algorithmic delay libopus adds (for A/V sync bookkeeping).
    public var lookaheadSamples: Int {
        var value: Int32 = 0
        let status = exclusive.run("OpusEncoder") { chorus_opus_encoder_get_lookahead(state, &value) }
        return status == OPUS_OK ? Int(value) : 0
    }

    /// Whether the last frame was a DTX frame.
    public var isInDTX: Bool {
        var value: Int32 = 0
        let status = exclusive.run("OpusEncoder") { chorus_opus_encoder_get_in_dtx(state, &value) }
        return status == OPUS_OK && value != 0
    }

    /// Creates a mono 48 kHz encoder with the given settings.
    public init(
        bitrate: Int = 32_000, complexity: Int = 5, inbandFEC: Bool = true,
        expectedPacketLossPercent: Int = 0, dtx: Bool = false, mode: Mode = .voip
    ) throws(AudioCodecError) {
        var error: Int32 = 0
        guard let state = opus_encoder_create(
            Int32(AudioCodecFormat.sampleRate), 1, mode.application, &error
        ), error == OPUS_OK else {
            throw .creationFailed(code: error)
        }
        self.state = state
        self.mode = mode
        self.bitrate = Self.clamp(bitrate, 6_000, 510_000)
        self.complexity = Self.clamp(complexity, 0, 10)
        self.inbandFEC = inbandFEC
        self.expectedPacketLossPercent = Self.clamp(expectedPacketLossPercent, 0, 100)
        self.dtx = dtx
        // Property observers do not run in init: push every setting once.
        _ = chorus_opus_encoder_set_signal(state, OPUS_SIGNAL_VOICE)
        applyAll()
    }

    deinit {
        opus_encoder_destroy(state)
    }

    public func encode(
        _ pcm: UnsafeBufferPointer<Int16>, into payload: UnsafeMutableBufferPointer<UInt8>
    ) throws(AudioCodecError) -> Int {
        guard let input = pcm.baseAddress, Self.isValidFrameLength(pcm.count) else {
            throw .invalidFrameLength(pcm.count)
        }
        guard let output = payload.baseAddress, payload.count > 0 else { throw .bufferTooSmall(needed: 1) }
        let result = exclusive.run("OpusEncoder") {
            opus_encode(state, input, Int32(pcm.count), output, Int32(clamping: payload.count))
        }
        guard result > 0 else { throw .encodeFailed(code: result) }
        return Int(result)
    }

    public func encode(
        _ pcm: UnsafeBufferPointer<Float>, into payload: UnsafeMutableBufferPointer<UInt8>
    ) throws(AudioCodecError) -> Int {
        guard let input = pcm.baseAddress, Self.isValidFrameLength(pcm.count) else {
            throw .invalidFrameLength(pcm.count)
        }
        guard let output = payload.baseAddress, payload.count > 0 else { throw .bufferTooSmall(needed: 1) }
        let result = exclusive.run("OpusEncoder") {
            opus_encode_float(state, input, Int32(pcm.count), output, Int32(clamping: payload.count))
        }
        guard result > 0 else { throw .encodeFailed(code: result) }
        return Int(result)
    }

    public func reset() {
        exclusive.run("OpusEncoder") {
            _ = chorus_opus_encoder_reset_state(state)
            // OPUS_RESET_STATE keeps the settings (it only clears the signal history), but push them
            // again so a reset can never leave the encoder out of step with these properties.
            applyAll()
        }
    }

    /// Continues `other`'s stream: this encoder takes a copy of its state, so the next packet
    /// it encodes is the one `other` would have encoded from the same input. A receiver whose
    /// decoder followed `other`'s packets can then be switched to this encoder without a
    /// discontinuity (the mixer's case: a listener of the shared full mix that becomes a
    /// speaker gets its own mix). This encoder's own settings are applied again after the copy.
    /// False (nothing copied) when the two encoders differ in mode.
    @discardableResult
    public func continueStream(of other: OpusEncoder) -> Bool {
        guard other !== self, other.mode == mode else { return false }
        other.exclusive.run("OpusEncoder") {
            exclusive.run("OpusEncoder") {
                chorus_opus_encoder_copy_state(state, other.state, 1)
                _ = chorus_opus_encoder_set_signal(state, OPUS_SIGNAL_VOICE)
                applyAll()
            }
        }
        return true
    }

    // MARK: - Helpers

    /// Unchecked: callers run it inside `exclusive` (or in `init`, before anyone else has the encoder).
    private func applyAll() {
        apply(chorus_opus_encoder_set_bitrate, bitrate)
        apply(chorus_opus_encoder_set_complexity, complexity)
        apply(chorus_opus_encoder_set_inband_fec, inbandFEC ? 1 : 0)
        apply(chorus_opus_encoder_set_packet_loss_perc, expectedPacketLossPercent)
        apply(chorus_opus_encoder_set_dtx, dtx ? 1 : 0)
    }

    /// Values are clamped before they get here, so libopus cannot answer OPUS_BAD_ARG.
    private func apply(_ request: (OpaquePointer?, Int32) -> Int32, _ value: Int) {
        _ = request(state, Int32(clamping: value))
    }

    private static func clamp(_ value: Int, _ low: Int, _ high: Int) -> Int {
        min(max(value, low), high)
    }

    /// Opus frames are 2.5, 5, 10, 20, 40 or 60 ms (and 80/100/120 ms since 1.2).
    static func isValidFrameLength(_ samples: Int) -> Bool {
        switch samples {
        case 120, 240, 480, 960, 1_920, 2_880, 3_840, 4_800, 5_760: true
        default: false
        }
    }
}
