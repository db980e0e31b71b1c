import ChorusCore
import ChorusTestSupport
@testable import Rooms
import Testing

/// A big room's once-a-second member work (call quality, the downlink estimate's sample) comes
/// in stripes, a fiftieth of the room a tick (`MemberStripes`), and its video scans walk only
/// the members with video. The room here is made "big" by lowering the threshold: 60 members
/// fill every stripe, ten of them twice.
@Suite("RoomCore: once-a-second member work in stripes")
struct RoomCoreStripeTests {
    static let members = 60

    func stripedRoom() throws -> SimulatedRoom {
        let room = try SimulatedRoom(settings: RoomSettings(maxParticipants: Self.members, mixedSpeakers: 3, videoSlots: 0))
        room.core.stripedMemberMinimum = 2
        for index in 0..<Self.members {
            try room.join("m\(index)")
            if index % 20 == 19 { room.talk(milliseconds: 40) }
        }
        room.talk(milliseconds: 200)
        #expect(room.core.joinOrder.allSatisfy { $0.state == .established })
        return room
    }

    /// Each member's seconds judged, by call ID.
    func judged(_ room: SimulatedRoom) -> [CallID: Int] {
        Dictionary(uniqueKeysWithValues: room.core.quality.members.map { ($0.callId, $0.quality.seconds) })
    }

    @Test func everyMemberIsJudgedOnceASecondAndNoTickJudgesMoreThanItsStripe() throws {
        let room = try stripedRoom()
        let before = judged(room)
        var last = before
        var mostInOneTick = 0
        // 150 ticks, a stall of 300 ms among them (15 grid ticks in one late firing: 5 caught
        // up, 10 dropped): the stripes of dropped ticks are still visited.
        room.talk(milliseconds: 1_000) { now in
            let current = judged(room)
            mostInOneTick = max(mostInOneTick, current.filter { $0.value != last[$0.key] }.count)
            last = current
        }
        room.stall(milliseconds: 300)
        room.talk(milliseconds: 1_700)
        let after = judged(room)
        let counts = after.map { $0.value - (before[$0.key] ?? 0) }
        #expect(counts.allSatisfy { $0 == 3 }, "seconds judged in 3 s: \(counts.sorted())")
        // At most two members share a stripe (60 over 50); a small room judges all 60 at once.
        #expect(mostInOneTick >= 1 && mostInOneTick <= 2, "judged in one tick: \(mostInOneTick)")
    }

    @Test func aSmallRoomJudgesEveryoneOnTheRoomsSecond() throws {
        let room = try stripedRoom()
        room.core.stripedMemberMinimum = 200
        let before = judged(room)
        var last = before
        var changedTogether: [Int] = []
        room.talk(milliseconds: 2_000) { _ in
            let current = judged(room)
            let changed = current.filter { $0.value != last[$0.key] }.count
            if changed > 0 { changedTogether.append(changed) }
            last = current
        }
        #expect(changedTogether == [Self.members, Self.members], "members judged together: \(changedTogether)")
    }

    @Test func everyMembersEstimateIsSampledWithinEachSecond() throws {
        let room = try stripedRoom()
        room.talk(milliseconds: 1_000)
        let now = room.now
        let ages = room.core.bandwidth.members.map { member in member.estimateSampledAt.map { now.nanoseconds(since: $0) } }
        #expect(ages.allSatisfy { $0.map { $0 <= 1_000_000_000 } == true }, "sampled ages \(ages)")
    }

    @Test func onlyMembersWithVideoAreWalkedByTheVideoTick() throws {
        let room = try SimulatedRoom()
        try room.join("ann", fixture: "aiortc-av-2slots.sdp")
        try room.join("bob")
        try room.join("cid", fixture: "aiortc-av-2slots.sdp")
        #expect(room.core.video.members.map(\.callId) == [room.callId("ann"), room.callId("cid")])
        #expect(room.end("ann", cause: .hungUp))
        #expect(room.core.video.members.map(\.callId) == [room.callId("cid")])
    }
}
