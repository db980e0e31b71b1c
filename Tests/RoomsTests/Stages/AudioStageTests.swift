import AudioMixer
import ChorusCore
import ChorusTestSupport
import RTCP
import RTP
import Testing

@testable import Rooms

/// The audio stage on its own, on a simulated clock: members added from their contracts with
/// recording connections, packets handed in and ticks run by the test, and what each member
/// was sent decoded and measured (Goertzel). No room core, no transport.
@Suite("AudioStage on a simulated clock")
struct AudioStageTests {
    /// A member of the test: its handle, its connection, its microphone (a tone or silence,
    /// as Opus or as L16 at its format's rate).
    final class Speaker {
        let callId: CallID
        let handle: AudioStage.Handle
        let connection: RecordingConnection
        let media: MemberMedia
        var tone: TestTone?
        var sequence: UInt16 = 100
        var timestamp: UInt32 = 1_000
        let encoder: any AudioEncoder

        init(index: Int, media: MemberMedia, stage: inout AudioStage) throws {
            callId = CallID(guid: ApplicationKey(randomBytes: Array(repeating: UInt8(index + 1), count: 16)).rawValue)
            connection = RecordingConnection(rtcpSSRC: media.audioOut?.ssrc ?? SSRC(1))
            self.media = media
            handle = try stage.add(callId, userId: try UserID(validating: "u\(index)"), media: media, connection: connection)
            stage.setEstablished(handle)
            encoder = media.audioIn?.format.codec == .opus ? try OpusEncoder() : L16Codec()
        }

        var format: AudioFormat { media.audioIn!.format }

        /// The next 20 ms as the member sends it.
        func nextPacket() throws -> RTPPacket {
            let samples = format.clockRate / 50
            let pcm = tone?.nextFrame(samples: samples) ?? [Int16](repeating: 0, count: samples)
            var packet: [UInt8] = []
            try RTPHeaderFields(payloadType: PayloadType(masking: format.payloadType), sequenceNumber: sequence,
                                timestamp: timestamp, ssrc: media.audioIn!.ssrc!).serialize(into: &packet)
            packet += try encoder.encode(pcm)
            sequence &+= 1
            timestamp &+= UInt32(samples)
            return try RTPPacket(parsing: packet)
        }

        /// What it heard, decoded in its out format's rate.
        func heard() throws -> [Int16] {
            let out = media.audioOut!
            let decoder: any AudioDecoder = out.format.codec == .opus ? try OpusDecoder() : L16Codec()
            return try connection.sent(on: out.ssrc).flatMap { try decoder.decode(Array($0.payload)) }
        }

        func level(at frequency: Double) throws -> Double {
            let rate = media.audioOut!.format.clockRate
            return Spectrum.powerDB(of: Array(try heard().suffix(rate * 6 / 10)), at: frequency, sampleRate: Double(rate))
        }
    }

    static func opusMember(_ index: Int) -> MemberMedia {
        let opus = AudioFormat.opus(payloadType: 111)
        return MemberMedia(audioIn: .init(format: opus, ssrc: SSRC(UInt32(100 + index))),
                           audioOut: .init(format: opus, ssrc: SSRC(UInt32(200 + index))), sendsAudio: true)
    }

    /// Runs `ticks` 20 ms ticks: each member's packet, then the stage's tick.
    static func run(_ stage: inout AudioStage, _ speakers: [Speaker], ticks: Int, from start: inout MediaTime,
                    output: inout RoomOutput) throws {
        for _ in 0..<ticks {
            start = start.adding(milliseconds: 20)
            for speaker in speakers { stage.receive(try speaker.nextPacket(), from: speaker.handle, now: start) }
            _ = stage.tick(now: start, into: &output)
            output.removeAll()
        }
    }

    func stage() -> AudioStage { AudioStage(mixedSpeakers: 3, encoding: AudioEncoding(), lanes: 1, laneRunner: SerialLanes()) }

    @Test func everyoneHearsTheRoomMinusThemselves() throws {
        var stage = stage()
        let members = try (0..<3).map { try Speaker(index: $0, media: Self.opusMember($0), stage: &stage) }
        members[0].tone = TestTone(frequency: 500, amplitude: 0.3)
        members[1].tone = TestTone(frequency: 900, amplitude: 0.3)
        var now = MediaTime.seconds(10), output = RoomOutput()
        try Self.run(&stage, members, ticks: 150, from: &now, output: &output)
        #expect(try members[0].level(at: 500) < -60 && members[0].level(at: 900) > -30)
        #expect(try members[1].level(at: 900) < -60 && members[1].level(at: 500) > -30)
        #expect(try members[2].level(at: 500) > -30 && members[2].level(at: 900) > -30)
        // The full mix and each speaker's own mix: at most three encodes a tick.
        #expect(stage.encodeCount <= 3 * 150)
    }

    /// A lone talker's own packets go to every listener as they are: no decode, no encode.
    @Test func aLoneTalkerIsRelayed() throws {
        var stage = stage()
        let members = try (0..<3).map { try Speaker(index: $0, media: Self.opusMember($0), stage: &stage) }
        members[0].tone = TestTone(frequency: 500, amplitude: 0.3)
        var now = MediaTime.seconds(10), output = RoomOutput()
        try Self.run(&stage, members, ticks: 100, from: &now, output: &output)
        #expect(stage.encodeCount == 0)
        #expect(try members[1].level(at: 500) > -30)
        let statistics = try #require(stage.statistics(members[1].handle))
        #expect(statistics["mixFramesRelayed"]! > 80 && statistics["mixFramesRelayed"] == statistics["mixFramesSent"])
    }

    /// A member at 16 kHz (L16) hears the Opus talker at its own rate, 320 samples a packet on
    /// its clock, and is heard by the others.
    @Test func aMemberAtAnotherRateHearsAndIsHeard() throws {
        var stage = stage()
        let l16 = AudioFormat.l16(clockRate: 16_000, payloadType: 100)!
        let pcm = MemberMedia(audioIn: .init(format: l16, ssrc: SSRC(300)), audioOut: .init(format: l16, ssrc: SSRC(301)),
                              sendsAudio: true)
        let talker = try Speaker(index: 0, media: Self.opusMember(0), stage: &stage)
        let listener = try Speaker(index: 1, media: Self.opusMember(1), stage: &stage)
        let phone = try Speaker(index: 2, media: pcm, stage: &stage)
        talker.tone = TestTone(frequency: 600, amplitude: 0.3)
        phone.tone = TestTone(frequency: 2_500, amplitude: 0.3, sampleRate: 16_000)
        var now = MediaTime.seconds(10), output = RoomOutput()
        try Self.run(&stage, [talker, listener, phone], ticks: 150, from: &now, output: &output)
        #expect(try phone.level(at: 600) > -30 && phone.level(at: 2_500) < -60)
        #expect(try listener.level(at: 600) > -30 && listener.level(at: 2_500) > -30)
        let mix = phone.connection.sent(on: SSRC(301))
        #expect(mix.allSatisfy { $0.payload.count == 640 && $0.header.payloadType.rawValue == 100 })
        #expect(zip(mix, mix.dropFirst()).allSatisfy { ($1.header.timestamp &- $0.header.timestamp) % 320 == 0 })
    }

    /// A muted member is not heard; a report block about its mix stream is taken, about any
    /// other stream not.
    @Test func muteAndReportsAboutTheMix() throws {
        var stage = stage()
        let members = try (0..<2).map { try Speaker(index: $0, media: Self.opusMember($0), stage: &stage) }
        members[0].tone = TestTone(frequency: 500, amplitude: 0.3)
        stage.setMuted(members[0].handle, true)
        var now = MediaTime.seconds(10), output = RoomOutput()
        try Self.run(&stage, members, ticks: 100, from: &now, output: &output)
        #expect(members[1].connection.sent(on: SSRC(201)).isEmpty, "a muted talker's mix was sent")
        var block = ReportBlock(ssrc: SSRC(201), fractionLost: 64, cumulativeLost: 10)
        #expect(stage.receiveReport(block, from: members[1].handle))
        #expect(stage.qualityInputs(members[1].handle)?.downlinkLossPercent == 25)
        block.ssrc = SSRC(999)
        #expect(!stage.receiveReport(block, from: members[1].handle))
    }

    /// A talking member who leaves is said to stop talking with the next tick, and the event
    /// still names its user (the published schema requires it).
    @Test func aTalkerWhoLeavesStopsTalkingByName() throws {
        var stage = stage()
        let members = try (0..<2).map { try Speaker(index: $0, media: Self.opusMember($0), stage: &stage) }
        members[0].tone = TestTone(frequency: 500, amplitude: 0.3)
        var now = MediaTime.seconds(10), output = RoomOutput()
        try Self.run(&stage, members, ticks: 50, from: &now, output: &output)
        stage.remove(members[0].handle)
        _ = stage.tick(now: now.adding(milliseconds: 20), into: &output)
        let stopped = output.events.compactMap { if case .talkingStopped(let who) = $0.event { who } else { nil } }
        #expect(stopped == [EventMember(callId: members[0].callId, userId: try UserID(validating: "u0"))])
    }

    /// A member taken out is forgotten; its figures were caught up first, and a later member
    /// may take its slot.
    @Test func removingAMemberFreesItsSlot() throws {
        var stage = stage()
        let first = try Speaker(index: 0, media: Self.opusMember(0), stage: &stage)
        stage.remove(first.handle)
        #expect(stage.member(first.handle) == nil && stage.members.isEmpty)
        let second = try Speaker(index: 1, media: Self.opusMember(1), stage: &stage)
        #expect(stage.member(second.handle) != nil && stage.statistics(first.handle) == nil)
    }
}
