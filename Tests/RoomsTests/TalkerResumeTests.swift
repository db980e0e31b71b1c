import ChorusCore
import ChorusTestSupport
import RTP
import Testing

/// How soon a listener hears a talker who starts after a silence in DTX (one packet every
/// 400 ms, as browsers send), against one who changes what it says mid-speech: both go through
/// the talker's jitter buffer, the tick and the mix encoder, so the two delays should match.
/// A buffer that waited its target delay over again when a stream came back from DTX would add
/// that delay to every first word after a pause (mutation-checked: 85 ms became 165 ms).
@Suite("A talker resuming from DTX on a simulated clock")
struct TalkerResumeTests {
    /// Milliseconds from the tick at which bob starts saying 900 Hz until dan first receives a
    /// mix packet whose decoded frame carries it. Before that, for 2 s, bob is silent in DTX
    /// (`paused`) or says 700 Hz; ann says 500 Hz throughout, or is silent in DTX too
    /// (`roomSilent`: the mix stream pauses, and bob's first words restart it).
    func heardAfter(paused: Bool, roomSilent: Bool = false) throws -> Int {
        let room = try SimulatedRoom(seed: 11)
        for name in ["ann", "bob", "dan"] { try room.join(name) }
        room.say("ann", frequency: roomSilent ? nil : 500)
        room.say("bob", frequency: paused ? nil : 700)
        let dan = try #require(room.peers["dan"])
        let ssrc = try #require(dan.answerSSRCs["0"])
        var arrivals: [Int] = []  // the millisecond each of dan's mix packets arrived
        var ticks = 0
        var started: Int?
        for millisecond in 0..<3_000 {
            room.run(milliseconds: 1) { _ in
                ticks += 1
                if ticks == 100 {
                    room.say("bob", frequency: 900)
                    started = millisecond
                }
                for name in ["ann", "bob", "dan"] {
                    guard let peer = room.peers[name] else { continue }
                    // A silent microphone is in DTX: one packet every 20 ticks (400 ms).
                    if room.microphones[name]?.tone == nil, ticks % 20 != 1 {
                        room.microphones[name]?.skipFrame()
                    } else if let packet = room.microphones[name]?.nextPacket(from: peer) {
                        room.send(packet, from: peer)
                    }
                }
            }
            let count = dan.received[ssrc]?.count ?? 0
            while arrivals.count < count { arrivals.append(millisecond) }
        }
        let start = try #require(started)
        let heard = try Self.firstArrival(of: 900, in: dan.received[ssrc] ?? [], arrivals: arrivals, from: start)
        return heard.map { $0 - start } ?? .max
    }

    /// The arrival (ms) of the first packet at or after `start` whose decoded frame carries
    /// `frequency` (above -30 dBFS); the packets are decoded in order from the first.
    static func firstArrival(of frequency: Double, in packets: [RTPPacket], arrivals: [Int], from start: Int) throws
        -> Int?
    {
        for (frame, arrival) in zip(try PeerEar.frames(packets), arrivals) where arrival >= start && !frame.isEmpty {
            if Spectrum.powerDB(of: frame, at: frequency) > -30 { return arrival }
        }
        Issue.record("never heard \(frequency) Hz")
        return nil
    }

    @Test func aTalkerBackFromDTXIsHeardAsSoonAsOneSpeakingOn() throws {
        let speaking = try heardAfter(paused: false)
        let resumed = try heardAfter(paused: true)
        let silentRoom = try heardAfter(paused: true, roomSilent: true)
        print("speaking on: heard after \(speaking) ms; back from DTX: \(resumed) ms; in a silent room: \(silentRoom) ms")
        #expect(resumed <= speaking + 20, "back from DTX \(resumed) ms, speaking on \(speaking) ms")
        #expect(silentRoom <= speaking + 20, "in a silent room \(silentRoom) ms, speaking on \(speaking) ms")
    }
}
