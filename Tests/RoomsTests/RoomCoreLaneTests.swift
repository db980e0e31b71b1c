import ChorusCore
import ChorusTestSupport
import RTP
import Rooms
import Testing

/// A room too big for one thread: its listeners' mix packets are written and protected on
/// several lanes at once (`RoomCore+Lanes`). Every listener must still get one stream in order,
/// as from a room on one thread, and hear the room.
@Suite("RoomCore: a big room's listeners served on lanes")
struct RoomCoreLaneTests {
    static let tones: [String: Double] = ["ann": 500, "bob": 900, "cid": 1_500]

    @Test func threeHundredListenersOnLanesGetTheirStreamsInOrderAndHearTheRoom() throws {
        let room = try SimulatedRoom(settings: RoomSettings(maxParticipants: 300, mixedSpeakers: 3, videoSlots: 9), lanes: 4)
        let talkers = ["ann", "bob", "cid"]
        let listeners = (0..<297).map { "l\($0)" }
        // Each join takes simulated time: everyone talks a little between groups of joins, so
        // nobody goes 30 s without proving it is there (consent freshness).
        for (index, name) in (listeners + talkers).enumerated() {
            try room.join(name)
            room.say(name, frequency: Self.tones[name])
            if index % 50 == 49 { room.talk(milliseconds: 40) }
        }
        for peer in room.peers.values { peer.clearReceived() }
        room.talk(milliseconds: 1_500)
        #expect((talkers + listeners).allSatisfy { room.snapshot($0)?.state == .established })
        // The full mix goes to 297 listeners: three lanes of 99.
        #expect(room.core.laneFanOuts >= 70, "lanes used \(room.core.laneFanOuts) times")
        // And every tick's 300 jitter buffers are read on the lanes too.
        #expect(room.core.laneInputFanOuts >= 75, "inputs on lanes \(room.core.laneInputFanOuts) times")
        let frequencies = talkers.map { Self.tones[$0]! }
        for (index, name) in listeners.enumerated() {
            let peer = try #require(room.peers[name])
            let ssrc = try #require(peer.answerSSRCs["0"])
            let packets = peer.received[ssrc] ?? []
            #expect(packets.count >= 70, "\(name) got \(packets.count) packets")
            // In arrival order (the simulated link neither loses nor reorders): each packet the
            // next sequence number, one 20 ms frame later.
            let steps = zip(packets, packets.dropFirst()).map { pair in
                (pair.1.header.sequenceNumber &- pair.0.header.sequenceNumber,
                 pair.1.header.timestamp &- pair.0.header.timestamp)
            }
            #expect(steps.allSatisfy { $0 == (1, 960) }, "\(name): steps \(steps.filter { $0 != (1, 960) })")
            // Listeners of every lane hear every talker.
            if index % 50 == 0 || index == listeners.count - 1 {
                let levels = try PeerEar.levels(heardBy: peer, at: frequencies)
                #expect(levels.allSatisfy { $0 > -30 }, "\(name) hears \(levels) dBFS")
            }
        }
    }

    /// The inputs a big room prepares on its lanes are the ones its thread would make alone:
    /// two rooms that differ only in their lanes send every participant the same Opus
    /// payloads, byte for byte, and every participant's receive side ends in the same state
    /// (the simulated clock and network make both rooms replay the same ticks).
    @Test func inputsPreparedOnLanesAreTheOnesOneThreadMakes() throws {
        func run(lanes: Int) throws -> (room: SimulatedRoom, payloads: [String: [[UInt8]]]) {
            let room = try SimulatedRoom(settings: RoomSettings(maxParticipants: 200, mixedSpeakers: 3, videoSlots: 9),
                                         seed: 5, lanes: lanes)
            let names = (0..<197).map { "l\($0)" } + ["ann", "bob", "cid"]
            for (index, name) in names.enumerated() {
                try room.join(name)
                room.say(name, frequency: Self.tones[name])
                if index % 50 == 49 { room.talk(milliseconds: 40) }
            }
            room.talk(milliseconds: 1_000)
            // Every participant's receive side too: decodes skipped, held, concealed; level.
            statistics = names.map { room.snapshot($0)?.audioStatistics ?? [:] }
            var payloads: [String: [[UInt8]]] = [:]
            for name in ["l0", "l98", "l196", "ann", "cid"] {
                let peer = try #require(room.peers[name])
                let ssrc = try #require(peer.answerSSRCs["0"])
                payloads[name] = (peer.received[ssrc] ?? []).map { Array($0.payload) }
            }
            return (room, payloads)
        }
        var statistics: [[String: Int]] = []
        let alone = try run(lanes: 1)
        let aloneStatistics = statistics
        let onLanes = try run(lanes: 2)
        let differing = zip(aloneStatistics, statistics).filter { $0 != $1 }.count
        #expect(statistics.count == aloneStatistics.count && differing == 0,
                "the receive side differs for \(differing) participants")
        #expect(aloneStatistics.contains { ($0["skippedDecodes"] ?? 0) > 0 })
        #expect(alone.room.core.laneInputFanOuts == 0)
        #expect(onLanes.room.core.laneInputFanOuts >= 50)
        for (name, payloads) in alone.payloads {
            #expect(payloads.count >= 40, "\(name) got \(payloads.count) packets")
            #expect(onLanes.payloads[name] == payloads, "\(name) heard something else on lanes")
        }
    }
}
