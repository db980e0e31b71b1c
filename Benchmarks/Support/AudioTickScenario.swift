import AudioMixer
import ChorusCore
import ChorusTestSupport
import RTP
import Rooms

/// One audio-only room core of `participants` connected client peers (aiortc's offer, with the
/// RFC 6464 level): three talkers send a tone every 20 ms, everyone else sends encoded silence
/// once every 400 ms as Opus DTX does (staggered), each packet with its level. One measured
/// step is one tick's worth: that tick's packets through `RoomCore.receive` (SRTP unprotect,
/// RTP parse, jitter buffer) and then `RoomCore.tick` (the talkers' decodes, the mixer, the
/// distinct Opus encodes, and for every listener its RTP header and SRTP protect into a
/// transmit). The shell's socket writes are not included; the room runs on one thread.
///
/// The packets are built (Opus-encoded and protected by the peers) outside what a caller
/// measures: `ticks(count:)`, then `run(_:)` per tick.
public final class AudioTickScenario {
    /// One tick's incoming datagrams: the index of the sending peer and its protected packet.
    public typealias TickPackets = [(peer: Int, datagram: [UInt8])]

    public static let talkers = 3
    public let participants: Int
    let room: ConnectedRoom
    private var microphones: [PeerMicrophone]
    private var tickIndex = 0

    /// `lanes` above 1 spreads the big room's per-member work as the server does on that many
    /// cores (`AudioStage+Lanes`); the lanes' threads are `concurrentPerform`'s (`ConcurrentLanes`).
    public init(participants: Int, lanes: Int = 1) throws {
        self.participants = max(participants, Self.talkers + 1)
        room = try ConnectedRoom(settings: RoomSettings(maxParticipants: self.participants, mixedSpeakers: 3, videoSlots: 0),
                                 lanes: lanes)
        microphones = try (0..<self.participants).map { index in
            try PeerMicrophone(frequency: index < Self.talkers ? 300 + 200 * Double(index) : nil)
        }
        for index in 0..<self.participants {
            let peer = try ClientPeer(name: "p\(index)", port: UInt16(20_000 + index), fixture: "aiortc-audio-only.sdp",
                                      seed: UInt64(1 + index))
            try room.join(peer, index: index)
            // Authenticated media keeps consent fresh (RFC 7675; a join takes 20 ms of the
            // room's time, so 1,000 take 20 s): everyone joined sends a packet every 50 joins.
            if index % 50 == 49 {
                for sender in 0...index {
                    if let transmit = microphones[sender].nextPacket(from: room.peers[sender]) {
                        _ = room.receive(transmit.datagram, from: room.peers[sender],
                                         callId: ConnectedRoom.callID(index: sender), after: 0)
                    }
                }
            }
        }
        try room.requireConnected()
        // Past the jitter buffers' start: every talker heard by everyone else.
        for packets in ticks(count: 10) { _ = runTick(packets) }
        let sent = runTick(ticks(count: 1)[0])
        guard sent >= self.participants else {
            throw ConnectedRoom.SetupError(description: "one tick sent \(sent) datagrams to \(self.participants) listeners")
        }
    }

    /// The next `count` ticks' packets, in order.
    public func ticks(count: Int) -> [TickPackets] {
        (0..<count).map { _ in
            defer { tickIndex += 1 }
            var packets: TickPackets = []
            // Talkers send every tick; the others one packet in 20, as Opus DTX does (the
            // timestamp moves on, the sequence number does not).
            for index in microphones.indices {
                guard index < Self.talkers || (index + tickIndex) % 20 == 0 else {
                    microphones[index].skipFrame()
                    continue
                }
                if let transmit = microphones[index].nextPacket(from: room.peers[index]) {
                    packets.append((index, transmit.datagram))
                }
            }
            return packets
        }
    }

    /// One tick: its packets into the room, then the room's tick; returns how many datagrams
    /// the room sent. (The measured step: `make bench-instructions` counts inside this function
    /// only, so the setup calls `runTick` instead.)
    @discardableResult
    public func run(_ packets: TickPackets) -> Int { runTick(packets) }

    private func runTick(_ packets: TickPackets) -> Int {
        var sent = 0
        for packet in packets {
            sent += room.receive(packet.datagram, from: room.peers[packet.peer], callId: ConnectedRoom.callID(index: packet.peer),
                                 after: 0)
        }
        return sent + room.tick()
    }
}
