import ChorusCore
import ChorusTestSupport
import RTCP
import RTP
import Rooms
import Testing

/// The room's video policy through `RoomCore`, with aiortc-shaped peers (a VP8 camera, two
/// receive-only slots with RTX) on a simulated clock.
@Suite("RoomCore video on a simulated clock")
struct RoomCoreVideoTests {
    static let fixture = "aiortc-av-2slots.sdp"

    /// ann publishes, bob watches; both cameras run `milliseconds`.
    func publisherAndViewer(milliseconds: Int = 2_000) throws -> (SimulatedRoom, [String: PeerCamera]) {
        let room = try SimulatedRoom()
        try room.join("ann", fixture: Self.fixture)
        try room.join("bob", fixture: "aiortc-audio-only.sdp")
        try room.join("cid", fixture: Self.fixture)
        var cameras = ["ann": PeerCamera()]
        room.talkAndShow(milliseconds: milliseconds, cameras: &cameras)
        return (room, cameras)
    }

    /// The VP8 frames `viewer` received in its first slot (mid 2).
    func slotPackets(_ room: SimulatedRoom, _ viewer: String) -> [RTPPacket] {
        let peer = room.peers[viewer]!
        return peer.answerSSRCs["2"].flatMap { peer.received[$0] } ?? []
    }

    @Test func aSlotSwitchesOnTheRequestedKeyframe() throws {
        let (room, cameras) = try publisherAndViewer()
        let packets = slotPackets(room, "cid")
        #expect(cameras["ann"]!.keyframesSent >= 1, "the room never asked ann for a keyframe")
        #expect(packets.count > 30)
        // Nothing before the keyframe: the first forwarded frame is one (VP8 header bit 0 clear).
        let first = try #require(packets.first)
        let descriptor = try VP8PayloadDescriptor(parsing: first.payload)
        #expect(descriptor.isKeyFrame(payload: first.payload))
        // Continuous sequence numbers on the slot, whatever the publisher's were.
        let sequences = packets.map(\.header.sequenceNumber)
        #expect(zip(sequences, sequences.dropFirst()).allSatisfy { $1 == $0 &+ 1 })
        let slots = room.eventNames(["video.slots"])
        #expect(slots.contains("video.slots:cid"))
        #expect(room.snapshot("cid")?.videoStatistics["slotSwitches"] == 1)
        // ann's own slots never show ann.
        #expect(slotPackets(room, "ann").isEmpty)
    }

    @Test func aLostKeyframeRequestIsRepeatedWhileASlotWaits() throws {
        let room = try SimulatedRoom()
        try room.join("ann", fixture: Self.fixture)
        try room.join("cid", fixture: Self.fixture)
        var camera = PeerCamera()
        camera.requestsToLose = 1
        var cameras = ["ann": camera]
        room.talkAndShow(milliseconds: 3_000, cameras: &cameras)
        let requests = room.peers["ann"]!.rtcpReceived.filter {
            if case .pictureLossIndication = $0 { return true } else { return false }
        }
        #expect(requests.count >= 2, "the room asked \(requests.count) time(s)")
        let first = try #require(slotPackets(room, "cid").first)
        #expect(try VP8PayloadDescriptor(parsing: first.payload).isKeyFrame(payload: first.payload))
        #expect(room.snapshot("cid")?.videoStatistics["slotSwitches"] == 1)
    }

    @Test func aNACKIsAnsweredWithTheSamePacketOverRTX() throws {
        let (room, cameras) = try publisherAndViewer()
        let cid = room.peers["cid"]!
        let slot = try #require(cid.answerSSRCs["2"])
        let wanted = try #require(slotPackets(room, "cid").dropLast(3).last)
        var compound: [UInt8] = []
        try ReceiverReport(ssrc: SSRC(cid.audioSSRC), reportBlocks: RTCPItemList([])).serialize(into: &compound)
        try GenericNACK(senderSSRC: SSRC(cid.audioSSRC), mediaSSRC: SSRC(slot),
                        lostSequenceNumbers: [wanted.header.sequenceNumber]).serialize(into: &compound)
        room.send(try #require(cid.rtcp(compound)), from: cid)
        room.run(milliseconds: 40)
        // RFC 4588: on the slot's RTX stream, the original sequence number, then the payload.
        let retransmissions = cid.received.filter { $0.key != slot && $0.key != cid.answerSSRCs["0"] }.flatMap(\.value)
        let rtx = try #require(retransmissions.first { $0.header.payloadType.rawValue == 98 })
        let payload = Array(rtx.payload)
        #expect(UInt16(payload[0]) << 8 | UInt16(payload[1]) == wanted.header.sequenceNumber)
        #expect(Array(payload.dropFirst(2)) == Array(wanted.payload))
        #expect(room.snapshot("cid")?.videoStatistics["nacksAnswered"] == 1)
        _ = cameras
    }

    /// `viewer`'s REMB for its first slot (mid 2).
    func sendREMB(_ bitrate: UInt64, from viewer: String, in room: SimulatedRoom) throws {
        let peer = room.peers[viewer]!
        let slot = try #require(peer.answerSSRCs["2"])
        var compound: [UInt8] = []
        try ReceiverReport(ssrc: SSRC(peer.audioSSRC), reportBlocks: RTCPItemList([])).serialize(into: &compound)
        try ReceiverEstimatedMaximumBitrate(senderSSRC: SSRC(peer.audioSSRC), bitrate: bitrate,
                                            ssrcs: RTCPItemList([SSRC(slot)])).serialize(into: &compound)
        room.send(try #require(peer.rtcp(compound)), from: peer)
    }

    /// The REMBs `name` has received, in order.
    func estimatesReceived(by name: String, in room: SimulatedRoom) -> [UInt64] {
        room.peers[name]!.rtcpReceived.compactMap { packet -> UInt64? in
            if case .receiverEstimatedMaximumBitrate(let remb) = packet { return remb.bitrate } else { return nil }
        }
    }

    @Test func aViewersEstimateReachesThePublisherAsREMB() throws {
        let (room, _) = try publisherAndViewer(milliseconds: 1_000)
        try sendREMB(450_000, from: "cid", in: room)
        var cameras = ["ann": PeerCamera()]
        room.talkAndShow(milliseconds: 1_500, cameras: &cameras)
        let estimates = estimatesReceived(by: "ann", in: room)
        #expect(estimates.contains(450_000), "ann got \(estimates)")
    }

    /// A thin viewer does not pull a single-stream publisher down for everyone: ann is sent the
    /// best-placed viewer's estimate, never the thin one's.
    @Test func aThinViewerDoesNotLowerASingleStreamPublisher() throws {
        let (room, _) = try publisherAndViewer(milliseconds: 1_000)
        try room.join("dan", fixture: Self.fixture)
        var cameras = ["ann": PeerCamera()]
        room.talkAndShow(milliseconds: 500, cameras: &cameras)
        let before = estimatesReceived(by: "ann", in: room).count
        for _ in 0..<3 {
            try sendREMB(900_000, from: "cid", in: room)
            try sendREMB(150_000, from: "dan", in: room)
            room.talkAndShow(milliseconds: 1_000, cameras: &cameras)
        }
        let estimates = estimatesReceived(by: "ann", in: room).dropFirst(before)
        #expect(!estimates.isEmpty && estimates.allSatisfy { $0 == 900_000 }, "ann got \(Array(estimates))")
    }
}
