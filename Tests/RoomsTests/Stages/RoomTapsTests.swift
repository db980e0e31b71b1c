import AudioMixer
import ChorusCore
import RTP
import Testing

@testable import Rooms

/// The taps on their own: the full mix's packet handed in each tick, as the audio stage gives
/// it, goes out to each RTP forward and into the recording; what they wrote is read back.
@Suite("RoomTaps on a simulated clock")
struct RoomTapsTests {
    static func opusPacket() throws -> [UInt8] {
        try OpusEncoder().encode([Int16](repeating: 0, count: 960))
    }

    /// Each tick with a packet is one datagram with continuous sequence numbers; a tick
    /// without one (a silent mix) sends nothing and moves the timestamp on, and the packet
    /// after it starts a talk spurt (marker bit).
    @Test func aForwardSendsEachTicksPacketWithRTPTiming() throws {
        var taps = RoomTaps()
        let destination = TransportAddress(ipv4: "192.0.2.10", port: 5_004)!
        try taps.addForwarder(ForwarderRequest(id: "f", destination: destination, payloadType: 111, ssrc: 0x1234, srtp: nil))
        #expect(taps.tapsFullMix)
        let payload = try Self.opusPacket()
        var output = RoomOutput(), now = MediaTime.seconds(1)
        for tick in 0..<10 {
            now = now.adding(milliseconds: 20)
            _ = taps.tick(now: now, fullMix: tick == 4 ? nil : payload, tracks: [], into: &output)
        }
        let packets = try output.transmits.map { try RTPPacket(parsing: $0.datagram) }
        #expect(packets.count == 9 && output.transmits.allSatisfy { $0.destination == destination })
        #expect(packets.allSatisfy { $0.header.ssrc == SSRC(0x1234) && Array($0.payload) == payload })
        #expect(zip(packets, packets.dropFirst()).allSatisfy { $1.header.sequenceNumber == $0.header.sequenceNumber &+ 1 })
        #expect(packets.map(\.header.marker) == [true, false, false, false, true, false, false, false, false])
        #expect(packets[4].header.timestamp &- packets[3].header.timestamp == 1_920)
        #expect(taps.forwarderSnapshots.first?.packets == 9)
        #expect(taps.removeForwarder(id: "f") && !taps.tapsFullMix)
    }

    /// A recording: its header first, a tick's packet or silence each tick (ticks the grid
    /// dropped filled too), a track for a member from its first tick, and at the end the
    /// summary with the tracks' offsets.
    @Test func aRecordingWritesTheMixAndTracksOnTheRoomsClock() throws {
        var taps = RoomTaps()
        var output = RoomOutput()
        try taps.startRecording(id: "rec", perParticipant: true, into: &output)
        #expect(output.recordingWrites.count == 1)
        let payload = try Self.opusPacket()
        let member = CallID(guid: "00000000-0000-4000-8000-0000000000c1")
        let user = try UserID(validating: "cid")
        var now = MediaTime.seconds(1)
        var started: [CallID] = []
        for tick in 0..<100 {
            now = now.adding(milliseconds: tick == 50 ? 220 : 20)  // ten grid ticks lost at 50
            let tracks = tick >= 25 ? [TapTrackInput(callId: member, userId: user, played: [.packet(payload, samples: 960)],
                                                     muted: false)] : []
            started += taps.tick(now: now, fullMix: payload, tracks: tracks, into: &output)
        }
        #expect(started == [member])
        let result = taps.stopRecording(into: &output)
        let stopped = try #require(result)
        #expect(stopped.tracked == [member])
        #expect(abs(stopped.summary.durationSeconds - 2.2) < 0.05, "\(stopped.summary.durationSeconds) s")
        #expect(stopped.summary.tracks.map(\.offsetSeconds) == [0.5])
        #expect(output.trackWrites.last?.closes == true && output.trackWrites.last?.callId == member)
        #expect(taps.recordingId == nil && !taps.tapsFullMix)
    }
}
