import ChorusCore

/// What the steps of a `RoomCore` ask of their shell: datagrams to send, events to publish and
/// changes to the media port's routing table, in the order they happened. The shell owns one,
/// hands it to every core call, carries it out and empties it with `removeAll()`, which keeps
/// the arrays' capacity: a steady-state step allocates no output storage.
///
/// Not `Sendable`: it lives on the room's queue, between the core and the shell. Only the
/// socket side (`DatagramSink`) is shared across threads.
public struct RoomOutput {
    /// Datagrams to send, protected and addressed.
    public var transmits: [Transmit] = []
    /// Datagrams a fanned-out step protected on several lanes (`RoomCore+Lanes`), one batch
    /// per lane, sent after `transmits`. The batches hold different listeners' packets; one
    /// listener's packets of a step are all in one batch, in order.
    public var laneTransmits: [[Transmit]] = []
    /// Room events, in order, stamped with the media time they happened at.
    public var events: [RoomCoreEvent] = []
    /// Routing-table changes for the media port.
    public var routing: [RoutingChange] = []
    /// Bytes to append to the room's recording file, in order (`RoomCore+Recording`).
    public var recordingWrites: [[UInt8]] = []
    /// Bytes for the participants' own track files, in order (`RoomCore+Recording`).
    public var trackWrites: [RecordingTrackWrite] = []

    public init() {}

    public var isEmpty: Bool {
        transmits.isEmpty && events.isEmpty && routing.isEmpty && laneTransmits.allSatisfy(\.isEmpty)
            && recordingWrites.isEmpty && trackWrites.isEmpty
    }

    /// Every datagram of the step, `transmits` then the lanes' batches (for tests and tools;
    /// the shell sends the batches in parallel).
    public var allTransmits: [Transmit] { transmits + laneTransmits.joined() }

    /// How many datagrams the step sent, lanes included (without gathering them).
    public var transmitCount: Int { laneTransmits.reduce(transmits.count) { $0 + $1.count } }

    /// Makes at least `count` lane batches available.
    mutating func prepareLanes(_ count: Int) {
        while laneTransmits.count < count { laneTransmits.append([]) }
    }

    /// Empties the output, keeping its storage for the next step.
    public mutating func removeAll() {
        for lane in laneTransmits.indices { laneTransmits[lane].removeAll(keepingCapacity: true) }
        transmits.removeAll(keepingCapacity: true)
        events.removeAll(keepingCapacity: true)
        routing.removeAll(keepingCapacity: true)
        recordingWrites.removeAll(keepingCapacity: true)
        trackWrites.removeAll(keepingCapacity: true)
    }
}

/// One room event as the core produces it: a name, flat fields, and the media time of the step
/// that produced it. The shell numbers it and stamps the wall-clock time (`RoomEvent`).
public struct RoomCoreEvent: Sendable, Equatable {
    public let name: String
    public let fields: [String: EventField]
    public let at: MediaTime
}

/// A change the media port's demultiplexing table must make for the room (`MediaRouting`).
/// The core names participants by call ID; the shell maps them to its receivers.
public enum RoutingChange: Sendable, Equatable {
    /// STUN whose USERNAME starts with `ufrag:` goes to the participant.
    case register(ufrag: String, callId: CallID)
    /// Non-STUN datagrams from the address go to the participant (it passed an ICE check).
    case bind(TransportAddress, callId: CallID)
    /// The participant is gone: forget its ufrag.
    case unregister(ufrag: String, callId: CallID)
    case unbind(TransportAddress)
    /// SRTP/SRTCP with these sender SSRCs from an address no one is bound to goes to the
    /// participant, which may then check that address (NAT rebinding); nothing is adopted
    /// without a check.
    case registerSSRCs([SSRC], callId: CallID)
    case unregisterSSRCs([SSRC])
}
