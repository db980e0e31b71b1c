import ChorusCore
import ChorusTestSupport
import RTCP
import RTP
import Rooms
import Testing

/// A subscriber whose link carries only part of a publisher's VP8 temporal layers gets the
/// lower layers, as one continuous stream, on the simulated clock.
@Suite("RoomCore: VP8 temporal layers per subscriber")
struct RoomCoreTemporalLayerTests {
    static let fixture = "aiortc-av-2slots.sdp"

    /// ann publishes three temporal layers (~100, 160, 260 kbit/s cumulatively); cid's REMB
    /// leaves 210 kbit/s for video after the audio reserve: between TID ≤ 1 and TID ≤ 2.
    /// After the first allocations cid receives the base and middle layers only, with
    /// continuous sequence numbers, picture IDs and TL0PICIDX, at half the frame rate; before,
    /// it received all three. ann is not asked to lower its rate (no REMB).
    @Test func aBudgetBetweenTheSecondAndThirdLayerReceivesTheLowerTwo() throws {
        let room = try SimulatedRoom()
        let ann = try room.join("ann", fixture: Self.fixture)
        let cid = try room.join("cid", fixture: Self.fixture)
        try sendREMB(266_000, from: cid, in: room)
        var camera = TemporalPeerCamera()
        var tick = 0
        room.run(milliseconds: 6_000) { _ in
            if let packet = room.microphones["ann"]?.nextPacket(from: ann) { room.send(packet, from: ann) }
            if tick % 2 == 0 { for transmit in camera.nextFrame(from: ann) { room.send(transmit, from: ann) } }
            tick += 1
        }
        let slot = try #require(cid.answerSSRCs["2"])
        let packets = cid.received[slot] ?? []
        #expect(packets.count > 100)
        let descriptors = try packets.map { try VP8PayloadDescriptor(parsing: $0.payload) }
        // The last 3 s: TID 0 and 1 only, 12.5 frames a second of the 25.
        let recent = zip(packets, descriptors).filter {
            $0.0.header.timestamp &- packets.last!.header.timestamp > UInt32.max - 3 * 90_000
        }
        #expect(Set(recent.compactMap(\.1.temporalLayerID)) == [0, 1])
        let frames = Set(recent.map(\.0.header.timestamp)).count
        #expect((36...39).contains(frames), "\(frames) frames in 3 s")
        // Earlier it had all three (nothing was known of the rates at first).
        #expect(descriptors.contains { $0.temporalLayerID == 2 })
        // One continuous stream throughout.
        let sequences = packets.map(\.header.sequenceNumber)
        #expect(zip(sequences, sequences.dropFirst()).allSatisfy { $1 == $0 &+ 1 })
        for (previous, next) in zip(zip(packets, descriptors), zip(packets, descriptors).dropFirst()) {
            let newFrame = next.0.header.timestamp != previous.0.header.timestamp
            let pictureID = try #require(previous.1.pictureID)
            #expect(next.1.pictureID == (newFrame ? (pictureID + 1) & 0x7FFF : pictureID))
            let tl0Step: UInt8 = newFrame && next.1.temporalLayerID == 0 ? 1 : 0
            #expect(next.1.tl0PictureIndex == previous.1.tl0PictureIndex.map { $0 &+ tl0Step })
        }
        let snapshot = try #require(room.snapshot("cid"))
        #expect(snapshot.slots.first?.temporalLayer == 1)
        #expect((snapshot.videoStatistics["layerSwitches"] ?? 0) >= 1)
        // The publisher's layer shows its rates per TID, and cid's link does not lower ann's
        // stream: no REMB goes to a publisher whose stream has temporal layers.
        let rates = try #require(room.snapshot("ann")?.publishedLayers.first?.temporalBitrates)
        #expect(rates.count == 3 && rates[0] < rates[1] && rates[1] < rates[2])
        #expect(!ann.rtcpReceived.contains {
            if case .receiverEstimatedMaximumBitrate = $0 { true } else { false }
        })
    }

    private func sendREMB(_ bitrate: UInt64, from peer: ClientPeer, in room: SimulatedRoom) throws {
        let slot = try #require(peer.answerSSRCs["2"])
        var compound: [UInt8] = []
        try ReceiverReport(ssrc: SSRC(peer.audioSSRC), reportBlocks: RTCPItemList([])).serialize(into: &compound)
        try ReceiverEstimatedMaximumBitrate(senderSSRC: SSRC(peer.audioSSRC), bitrate: bitrate,
                                            ssrcs: RTCPItemList([SSRC(slot)])).serialize(into: &compound)
        room.send(try #require(peer.rtcp(compound)), from: peer)
    }
}
