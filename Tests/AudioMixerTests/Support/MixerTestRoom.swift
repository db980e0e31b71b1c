import AudioMixer
import ChorusCore
import RTP

/// A room's audio path, as the `Room` actor will drive it, with a PCM pass-through codec: per
/// tick every participant's frame goes into the mixer, each distinct mix is "encoded" once, and
/// each recipient's `OutboundAudioStream` packetises it. The packets are parsed back with the
/// RTP target's parser and "decoded", so the tests check what each participant would hear.
struct MixerTestRoom {
    enum Source {
        case tone(MixerTestTone)
        case noise(MixerTestNoise)
        case silence
        /// Nothing arrives (no frame at all).
        case absent
    }

    var mixer: RoomAudioMixer<String>
    var sources: [String: Source] = [:]
    var muted: Set<String> = []
    var streams: [String: OutboundAudioStream] = [:]
    var ssrcs: [String: SSRC] = [:]
    var encoder = PassThroughMixEncoder()
    /// What each participant heard, concatenated, while `recording` is on.
    var heard: [String: [Int16]] = [:]
    /// Every packet each participant received.
    var packets: [String: [RTPPacket]] = [:]
    var recording = false
    var tickIndex = 0
    var order: [String] = []
    static let extensionID: UInt8 = 3

    init(mixedSpeakers: Int = 3) {
        mixer = RoomAudioMixer(configuration: .init(mixedSpeakers: mixedSpeakers))
    }

    mutating func join(_ id: String, _ source: Source) {
        let ssrc = SSRC(0x1000 + UInt32(order.count))
        order.append(id)
        ssrcs[id] = ssrc
        sources[id] = source
        mixer.addParticipant(id, ssrc: ssrc)
        streams[id] = OutboundAudioStream(
            ssrc: SSRC(0xA000 + UInt32(order.count)), payloadType: PayloadType(111)!,
            initialSequenceNumber: 65_530, initialTimestamp: 4_294_960_000,
            csrcAudioLevelExtensionID: Self.extensionID)
    }

    /// Runs `count` ticks and returns their results.
    @discardableResult
    mutating func run(_ count: Int) throws -> [AudioMixerTick<String>] {
        var results: [AudioMixerTick<String>] = []
        for _ in 0..<count { results.append(try runTick()) }
        return results
    }

    mutating func runTick() throws -> AudioMixerTick<String> {
        for id in order {
            mixer.setInput(AudioMixerInput(frame: nextFrame(for: id), muted: muted.contains(id)), for: id)
        }
        let tick = mixer.tick(now: .tick(tickIndex))
        tickIndex += 1
        var buffer: [UInt8] = []
        for mix in tick.mixes {
            let payload = encoder.encode(mix.samples)
            for recipient in mix.recipients {
                buffer.removeAll(keepingCapacity: true)
                streams[recipient]!.packet(
                    payload: payload, csrcs: mix.csrcs, csrcAudioLevels: mix.csrcAudioLevels, into: &buffer)
                let packet = try RTPPacket(parsing: buffer)
                packets[recipient, default: []].append(packet)
                if recording { heard[recipient, default: []] += PassThroughMixEncoder.decode(packet.payload) }
            }
        }
        return tick
    }

    private mutating func nextFrame(for id: String) -> AudioMixerInput.Frame? {
        switch sources[id]! {
        case .tone(var tone):
            defer { sources[id] = .tone(tone) }
            return .int16(tone.nextFrame())
        case .noise(var noise):
            defer { sources[id] = .noise(noise) }
            return .int16(noise.nextFrame())
        case .silence:
            return .int16([Int16](repeating: 0, count: AudioMixerCore.frameLength))
        case .absent:
            return nil
        }
    }
}
