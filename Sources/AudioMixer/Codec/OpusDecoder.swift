import ChorusCore
import COpus

/// libopus decoder for one sending participant, always producing 48 kHz mono: the decoder is
/// created with one channel, so stereo packets are downmixed by libopus itself, and any Opus
/// bandwidth (narrowband … fullband) comes out at 48 kHz.
///
/// Owns the C state and frees it in `deinit`. Not thread-safe: like `OpusEncoder`, one user at
/// a time (its room's serial queue), and every call that touches the C state runs under an
/// `ExclusiveUseCheck`, so two threads in it at once trap.
///
/// Payloads are peer input: whatever libopus rejects (negative return) becomes
/// `AudioCodecError.invalidPayload`; nothing here can trap on packet contents.
///
/// `@unchecked Sendable`: owns an `OpaquePointer`; one user at a time (its room's queue), checked by `exclusive`.
public final class OpusDecoder: AudioDecoder, @unchecked Sendable {
    private let state: OpaquePointer
    private let exclusive = ExclusiveUseCheck()

    public var supportsInbandFEC: Bool { true }

    /// Duration in samples of the last packet decoded (or concealed), per libopus.
    public var lastPacketSamples: Int {
        var value: Int32 = 0
        let status = exclusive.run("OpusDecoder") { chorus_opus_decoder_get_last_packet_duration(state, &value) }
        return status == OPUS_OK ? Int(value) : 0
    }

    public init() throws(AudioCodecError) {
        var error: Int32 = 0
        guard let state = opus_decoder_create(Int32(AudioCodecFormat.sampleRate), 1, &error),
              error == OPUS_OK
        else {
            throw .creationFailed(code: error)
        }
        self.state = state
    }

    deinit {
        opus_decoder_destroy(state)
    }

    public func packetSamples(_ payload: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let data = payload.baseAddress, !payload.isEmpty, payload.count <= Int(Int32.max) else { return nil }
        let samples = opus_packet_get_nb_samples(data, Int32(payload.count), Int32(AudioCodecFormat.sampleRate))
        return samples > 0 ? Int(samples) : nil
    }

    public func decode(
        _ payload: UnsafeBufferPointer<UInt8>, into pcm: UnsafeMutableBufferPointer<Int16>
    ) throws(AudioCodecError) -> Int {
        // An empty payload would make libopus run PLC, which is not what a caller decoding a
        // received packet means: reject it here. (OPUS_INVALID_PACKET is -4.)
        guard let data = payload.baseAddress, !payload.isEmpty, payload.count <= Int(Int32.max) else {
            throw .invalidPayload(code: -4)
        }
        guard let output = pcm.baseAddress, pcm.count > 0 else { throw .bufferTooSmall(needed: 1) }
        let result = exclusive.run("OpusDecoder") {
            opus_decode(state, data, Int32(payload.count), output, Int32(clamping: pcm.count), 0)
        }
        return try Self.check(result)
    }

    public func decodeFEC(
        _ nextPayload: UnsafeBufferPointer<UInt8>, samples: Int, into pcm: UnsafeMutableBufferPointer<Int16>
    ) throws(AudioCodecError) -> Int {
        guard let data = nextPayload.baseAddress, !nextPayload.isEmpty, nextPayload.count <= Int(Int32.max) else {
            throw .invalidPayload(code: -4)
        }
        let length = try Self.concealmentLength(samples, capacity: pcm.count)
        guard let output = pcm.baseAddress else { throw .bufferTooSmall(needed: length) }
        // decode_fec = 1 with frame_size = the lost duration: libopus decodes the LBRR copy of the
        // previous frame from this packet, or runs PLC for that duration if the packet has none.
        let result = exclusive.run("OpusDecoder") {
            opus_decode(state, data, Int32(nextPayload.count), output, Int32(length), 1)
        }
        return try Self.check(result)
    }

    public func conceal(samples: Int, into pcm: UnsafeMutableBufferPointer<Int16>) throws(AudioCodecError) -> Int {
        let length = try Self.concealmentLength(samples, capacity: pcm.count)
        guard let output = pcm.baseAddress else { throw .bufferTooSmall(needed: length) }
        // data == NULL asks libopus for packet loss concealment of frame_size samples.
        let result = exclusive.run("OpusDecoder") { opus_decode(state, nil, 0, output, Int32(length), 0) }
        return try Self.check(result)
    }

    public func reset() {
        _ = exclusive.run("OpusDecoder") { chorus_opus_decoder_reset_state(state) }
    }

    // MARK: - Helpers

    /// PLC and FEC lengths must be multiples of 2.5 ms, at most 120 ms, and fit the buffer.
    private static func concealmentLength(_ samples: Int, capacity: Int) throws(AudioCodecError) -> Int {
        let unit = AudioCodecFormat.minimumFrameSamples
        let wanted = min(max(samples, unit), AudioCodecFormat.maxPacketSamples) / unit * unit
        guard wanted <= capacity else { throw .bufferTooSmall(needed: wanted) }
        return wanted
    }

    private static func check(_ result: Int32) throws(AudioCodecError) -> Int {
        guard result >= 0 else {
            if result == OPUS_BUFFER_TOO_SMALL { throw .bufferTooSmall(needed: AudioCodecFormat.maxPacketSamples) }
            throw .invalidPayload(code: result)
        }
        return Int(result)
    }
}
