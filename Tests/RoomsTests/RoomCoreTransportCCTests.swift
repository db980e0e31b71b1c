import ChorusCore
import ChorusTestSupport
import RTCP
import RTP
import Rooms
import Testing

/// Transport-wide congestion control through `RoomCore`, with a Chrome-shaped viewer (its offer
/// maps the transport-wide sequence number to ID 3 and asks for transport-cc) watching an
/// aiortc-shaped publisher, on a simulated clock.
@Suite("RoomCore transport-cc on a simulated clock")
struct RoomCoreTransportCCTests {
    static let extensionID: UInt8 = 3

    /// ann talks (440 Hz) and shows her camera for `milliseconds`; cid (Chrome's offer) watches.
    func viewerOfACamera(milliseconds: Int = 2_000) throws -> (SimulatedRoom, ClientPeer, [String: PeerCamera]) {
        let room = try SimulatedRoom()
        try room.join("ann", fixture: "aiortc-av-2slots.sdp")
        let viewer = try room.join("cid", fixture: "chrome-av-2slots.sdp")
        room.say("ann", frequency: 440)
        var cameras = ["ann": PeerCamera()]
        room.talkAndShow(milliseconds: milliseconds, cameras: &cameras)
        return (room, viewer, cameras)
    }

    /// Every packet's transport-wide sequence number, whatever stream it is on.
    func transportSequences(_ peer: ClientPeer) -> [UInt16] {
        peer.received.values.flatMap { $0 }.compactMap { packet in
            packet.headerExtensions.first(id: Self.extensionID).flatMap { $0.count == 2 ? $0.uint16(at: 0) : nil }
        }
    }

    @Test func everyPacketToTheViewerCarriesTheNextTransportWideSequenceNumber() throws {
        let (_, viewer, _) = try viewerOfACamera()
        let packets = viewer.received.values.flatMap { $0 }
        let sequences = transportSequences(viewer)
        #expect(packets.count > 100)
        #expect(sequences.count == packets.count, "some packets went out without the extension")
        // One counter across the mix, the slots and the probes: no gap, no repeat.
        let sorted = sequences.sorted()
        #expect(Set(sequences).count == sequences.count)
        #expect(sorted.first == 1 && sorted.last == UInt16(sequences.count))
        // The mix (Opus, 111) carries it too, beside its RFC 6465 levels.
        let mix = packets.filter { $0.header.payloadType.rawValue == 96 }
        #expect(mix.count > 40)
        #expect(mix.allSatisfy { $0.headerExtensions.first(id: Self.extensionID) != nil })
    }

    @Test func theViewerIsProbedWithPaddingOnItsSlotsRTXStream() throws {
        let (room, viewer, _) = try viewerOfACamera()
        // Chrome's offer pairs VP8 (96) with RTX 97.
        let padding = viewer.received.values.flatMap { $0 }.filter { $0.header.hasPadding && $0.payload.isEmpty }
        #expect(padding.allSatisfy { $0.header.payloadType.rawValue == 97 })
        #expect(padding.count >= 4, "no probe reached the viewer")
        #expect(padding.allSatisfy { $0.header.paddingLength == 255 })
        let statistics = try #require(room.snapshot("cid")?.videoStatistics)
        #expect(statistics["probePacketsSent"] == padding.count)
    }

    /// aiortc answers no transport-cc and maps abs-send-time (ID 3) on its slots: the video it
    /// is sent carries abs-send-time, by which its REMB estimator times arrivals, and no
    /// transport-wide sequence number; the mix carries neither.
    @Test func aREMBViewersSlotPacketsCarryAbsSendTime() throws {
        let room = try SimulatedRoom()
        try room.join("ann", fixture: "aiortc-av-2slots.sdp")
        let viewer = try room.join("bob", fixture: "aiortc-av-2slots.sdp")
        room.say("ann", frequency: 440)
        var cameras = ["ann": PeerCamera()]
        room.talkAndShow(milliseconds: 2_000, cameras: &cameras)
        let packets = viewer.received.values.flatMap { $0 }
        // aiortc: Opus 96, VP8 97, its RTX 98.
        let video = packets.filter { [97, 98].contains($0.header.payloadType.rawValue) }
        #expect(video.count > 20)
        let stamps = video.compactMap { $0.headerExtensions.first(id: 3) }
        #expect(stamps.count == video.count && stamps.allSatisfy { $0.count == 3 })
        // 20 ms apart or so: 2^18 units a second.
        let values = stamps.map { Int($0.uint24(at: 0)) }
        #expect(zip(values, values.dropFirst()).allSatisfy { (0...200_000).contains(($1 - $0) & 0xFF_FFFF) })
        let mix = packets.filter { $0.header.payloadType.rawValue == 96 }
        #expect(mix.count > 50 && mix.allSatisfy { $0.headerExtensions.first(id: 3) == nil })
    }

    /// The viewer acknowledges what it received, 100 ms after each packet's send time on a
    /// 10 Mbit/s-like path: the downlink estimate comes from the server's estimator.
    @Test func theViewersFeedbackBecomesItsDownlinkEstimate() throws {
        let (room, viewer, initial) = try viewerOfACamera(milliseconds: 500)
        var cameras = initial
        #expect(room.snapshot("cid")?.downlink == nil)
        var count: UInt8 = 0
        for _ in 0..<20 {
            viewer.clearReceived()
            room.talkAndShow(milliseconds: 100, cameras: &cameras)
            let sequences = transportSequences(viewer).sorted()
            guard let first = sequences.first else { continue }
            let base = Int64(room.now.nanoseconds / 1_000) - 100_000
            var writer = TransportFeedbackWriter(sequenceNumber: first, arrivalMicroseconds: base)
            for (index, sequence) in sequences.enumerated().dropFirst() {
                _ = writer.add(sequenceNumber: sequence, arrivalMicroseconds: base + Int64(index) * 200)
            }
            var compound: [UInt8] = []
            writer.serialize(senderSSRC: SSRC(viewer.audioSSRC), mediaSSRC: SSRC(0), feedbackPacketCount: count,
                             into: &compound)
            count &+= 1
            room.send(try #require(viewer.rtcp(compound)), from: viewer)
        }
        room.run(milliseconds: 20)
        let downlink = try #require(room.snapshot("cid")?.downlink)
        #expect(downlink.source == "transportCC")
        #expect(downlink.bitrate >= 30_000 && downlink.bitrate <= 200_000 + 2 * 2_500_000)
        #expect(room.snapshot("cid")?.counters.transportFeedbackReceived == 20)
    }
}
