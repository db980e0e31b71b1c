import ChorusCore
import RTCP
import RTP
import Testing
import VideoForwarder

@testable import Rooms

/// The video router on its own, on a simulated clock: a publisher's camera and a subscriber's
/// slot, added from their contracts with recording connections; camera packets, feedback and
/// ticks handed in by the test, and what each was sent read back. No room core, no transport.
@Suite("VideoRouter on a simulated clock")
struct VideoRouterTests {
    static let cameraSSRC = SSRC(0xA0), slotSSRC = SSRC(0xB0), slotRTX = SSRC(0xB1)

    /// A VP8 camera (payload type 97, one stream) and a subscriber with one VP8 slot and RTX.
    struct Room {
        var router = VideoRouter()
        let publisher = RecordingConnection(rtcpSSRC: SSRC(0xA1))
        let subscriber = RecordingConnection(rtcpSSRC: SSRC(0xB2))
        let publisherId = CallID(guid: "00000000-0000-4000-8000-00000000000a")
        let subscriberId = CallID(guid: "00000000-0000-4000-8000-00000000000b")
        var output = RoomOutput()
        var now = MediaTime.seconds(100)
        var sequence: UInt16 = 5_000
        var pictureID: UInt16 = 10
        /// What the subscriber's downlink allows (nil: not known yet).
        var budget: VideoBudget?

        init() throws {
            let camera = MemberMedia.Camera(codec: .vp8, payloadType: 97, rtxPayloadType: 98, clockRate: 90_000,
                                            ssrc: VideoRouterTests.cameraSSRC, rtxSSRC: nil)
            let slot = MemberMedia.Slot(mid: "1", codec: .vp8, payloadType: PayloadType(masking: 97),
                                        ssrc: VideoRouterTests.slotSSRC,
                                        rtx: (VideoRouterTests.slotRTX, PayloadType(masking: 98)))
            router.add(publisherId, userId: try UserID(validating: "pub"),
                       media: MemberMedia(audioIn: nil, audioOut: nil, sendsAudio: false, camera: camera), connection: publisher)
            router.add(subscriberId, userId: try UserID(validating: "sub"),
                       media: MemberMedia(audioIn: nil, audioOut: nil, sendsAudio: false, slots: [slot]),
                       connection: subscriber)
            let budget = self.budget
            router.setEstablished(publisherId, now: now, budgets: { _ in budget }, into: &output)
            router.setEstablished(subscriberId, now: now, budgets: { _ in budget }, into: &output)
        }

        /// One single-packet VP8 frame from the camera (a keyframe when asked).
        mutating func frame(keyframe: Bool) throws {
            var payload: [UInt8] = [0x90, 0x80, 0x80 | UInt8(pictureID >> 8 & 0x7F), UInt8(pictureID & 0xFF)]
            payload.append(keyframe ? 0x10 : 0x11)
            payload += [UInt8](repeating: 0x42, count: 300)
            var packet: [UInt8] = []
            try RTPHeaderFields(marker: true, payloadType: PayloadType(masking: 97), sequenceNumber: sequence,
                                timestamp: UInt32(sequence) &* 3_000, ssrc: VideoRouterTests.cameraSSRC).serialize(into: &packet)
            packet += payload
            sequence &+= 1
            pictureID = (pictureID + 1) & 0x7FFF
            let budget = self.budget
            router.receive(try RTPPacket(parsing: packet), from: publisherId, now: now, budgets: { _ in budget },
                           into: &output)
        }

        mutating func advance(milliseconds: UInt64) -> [PausedSlotNeed] {
            now = now.adding(milliseconds: milliseconds)
            let budget = self.budget
            return router.tick(now: now, budgets: { _ in budget }, into: &output)
        }

        mutating func feedback(_ packet: RTCPPacket) {
            let budget = self.budget
            router.receiveFeedback(packet, from: subscriberId, now: now, budgets: { _ in budget }, into: &output)
        }

        var picturesLossesSent: Int {
            publisher.sentRTCP.count { if case .pictureLossIndication = $0 { true } else { false } }
        }
    }

    /// The slot waits for the camera's keyframe (asked for with a PLI), then forwards every
    /// frame on its own stream: its SSRC and payload type, sequence numbers without holes.
    @Test func aSlotSwitchesOnTheKeyframeAndForwardsOnItsOwnStream() throws {
        var room = try Room()
        try room.frame(keyframe: false)
        #expect(room.picturesLossesSent == 1, "the new slot asks the camera for a keyframe")
        #expect(room.subscriber.sentRTP.isEmpty, "a delta frame before the keyframe is not shown")
        try room.frame(keyframe: true)
        for _ in 0..<5 { try room.frame(keyframe: false) }
        let forwarded = room.subscriber.sent(on: Self.slotSSRC)
        #expect(forwarded.count == 6)
        #expect(forwarded.allSatisfy { $0.header.payloadType.rawValue == 97 })
        #expect(zip(forwarded, forwarded.dropFirst()).allSatisfy { $1.header.sequenceNumber == $0.header.sequenceNumber &+ 1 })
        let slots = room.output.events.compactMap { if case .videoSlots(_, let slots) = $0.event { slots } else { nil } }
        #expect(slots.last?.first?.publisher?.callId == room.publisherId)
    }

    /// A NACK of a forwarded packet is answered from the camera's cache as RTX on the slot's
    /// RTX stream (RFC 4588: the original sequence number first); a PLI of the slot reaches the
    /// camera as a PLI of its own stream.
    @Test func nacksAreRepairedAsRTXAndPLIsReachTheCamera() throws {
        var room = try Room()
        try room.frame(keyframe: true)
        try room.frame(keyframe: true)
        try room.frame(keyframe: false)
        let forwarded = room.subscriber.sent(on: Self.slotSSRC)
        let lost = try #require(forwarded.last).header.sequenceNumber
        room.feedback(.genericNACK(GenericNACK(senderSSRC: SSRC(0xB2), mediaSSRC: Self.slotSSRC, lostSequenceNumbers: [lost])))
        let repair = try #require(room.subscriber.sent(on: Self.slotRTX).first)
        #expect(repair.header.payloadType.rawValue == 98)
        #expect(Array(repair.payload.prefix(2)) == [UInt8(lost >> 8), UInt8(lost & 0xFF)])
        let before = room.picturesLossesSent
        _ = room.advance(milliseconds: 600)
        room.feedback(.pictureLossIndication(PictureLossIndication(senderSSRC: SSRC(0xB2), mediaSSRC: Self.slotSSRC)))
        #expect(room.picturesLossesSent == before + 1)
        guard case .pictureLossIndication(let pli)? = room.publisher.sentRTCP.last else {
            Issue.record("no PLI to the camera")
            return
        }
        #expect(pli.mediaSSRC == Self.cameraSSRC)
    }

    /// A camera silent for 2 s is paused (`inactive`) and leaves the slot; a subscriber's
    /// estimate reaches a single-stream camera as REMB once a second.
    @Test func aSilentCameraIsPausedAndEstimatesReachThePublisher() throws {
        var room = try Room()
        try room.frame(keyframe: true)
        room.router.receiveEstimate(800_000, from: room.subscriberId, now: room.now)
        for _ in 0..<60 { _ = room.advance(milliseconds: 20) }
        let rembs = room.publisher.sentRTCP.compactMap {
            if case .receiverEstimatedMaximumBitrate(let remb) = $0 { remb } else { nil }
        }
        #expect(rembs.first?.bitrate == 800_000)
        for _ in 0..<60 { _ = room.advance(milliseconds: 20) }
        let paused = room.output.events.contains {
            if case .videoPaused(let who, .inactive) = $0.event { who.callId == room.publisherId } else { false }
        }
        #expect(paused)
        let slots = room.output.events.compactMap { if case .videoSlots(_, let slots) = $0.event { slots } else { nil } }
        #expect(slots.last?.first?.publisher == nil, "the slot still shows a silent camera")
    }

    /// A subscriber whose measured budget cannot carry the camera's one layer has the slot
    /// paused for bandwidth, and the router says what the paused slot needs (for the probes).
    @Test func aSlotTheBudgetCannotCarryIsPausedAndItsNeedIsSaid() throws {
        var room = try Room()
        for index in 0..<50 {
            try room.frame(keyframe: index == 0)
            _ = room.advance(milliseconds: 20)
        }
        room.budget = VideoBudget(video: 10_000, measured: 10_000)
        var needs: [PausedSlotNeed] = []
        for _ in 0..<60 {
            try room.frame(keyframe: false)
            needs += room.advance(milliseconds: 40)
        }
        #expect(room.router.slotViews(of: room.subscriberId).first?.paused == "bandwidth")
        let need = try #require(needs.last)
        #expect(need.callId == room.subscriberId && need.budget == 10_000 && (need.need ?? 0) > 10_000)
    }
}
