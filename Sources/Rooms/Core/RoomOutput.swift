import ChorusCore
import PeerTransport

/// What the steps of a `RoomCore` ask of their shell: datagrams to send, events to publish,
/// changes to the media port's routing table, bytes for the recording's files and the counts
/// for `/metrics`, in the order they happened. The shell owns one,
/// hands it to every core call, carries it out and empties it with `removeAll()`, which keeps
/// the arrays' capacity: a steady-state step allocates no output storage.
///
/// Not `Sendable`: it lives on the room's queue, between the core and the shell. Only the
/// socket side (`DatagramSink`) is shared across threads.
public struct RoomOutput {
    /// Datagrams to send, protected and addressed.
    public var transmits: [Transmit] = []
    /// Datagrams a fanned-out step protected on several lanes (`AudioStage+Lanes`), one batch
    /// per lane, sent after `transmits`. The batches hold different listeners' packets; one
    /// listener's packets of a step are all in one batch, in order.
    public var laneTransmits: [[Transmit]] = []
    /// Room events, in order, stamped with the media time they happened at.
    public var events: [TimedRoomEvent] = []
    /// Routing-table changes for the media port.
    public var routing: [RoutingChange] = []
    /// Bytes to append to the room's recording file, in order (`RoomTaps`).
    public var recordingWrites: [[UInt8]] = []
    /// Bytes for the participants' own track files, in order (`RoomTaps`).
    public var trackWrites: [RecordingTrackWrite] = []
    /// What the step counted, for the shell to add to `/metrics` (the core writes no global
    /// state).
    public var counters = RoomCounters()

    public init() {}

    /// Records an event of the step, at its time.
    mutating func emit(_ event: RoomEvent, at time: MediaTime) {
        events.append(TimedRoomEvent(event: event, at: time))
    }

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
        counters.removeAll()
    }
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

/// What a room's steps counted, for `/metrics`: the core and its stages touch no global state,
/// so each step's counts ride in its output and the shell adds them to the process's metrics
/// (`RoomMetrics`). Plain integers and a few samples: adding one costs an increment.
public struct RoomCounters: Sendable, Equatable {
    /// Datagrams dropped, by reason (indexed like `TransportDropReason.allCases`).
    public var drops = [Int](repeating: 0, count: TransportDropReason.allCases.count)
    /// RTCP BYEs received (counted, not a leave: browsers send BYE on replaceTrack).
    public var goodbyesReceived = 0
    /// Mix payloads delivered on several lanes.
    public var laneFanOuts = 0
    /// Audio ticks run late (caught up on the grid) and dropped (too late to catch up).
    public var audioTicksLate = 0
    public var audioTicksDropped = 0
    /// DTLS handshakes finished and failed.
    public var handshakesCompleted = 0
    public var handshakesFailed = 0
    /// Downlink estimates sampled this step (bit/s), one per member-second.
    public var downlinkEstimates: [Int] = []
    /// Layer switches per minute of calls that ended this step (members with slots, 10 s or more).
    public var layerSwitchRates: [Double] = []

    public init() {}

    mutating func drop(_ reason: TransportDropReason) {
        drops[Self.index(of: reason)] &+= 1
    }

    /// The dropped datagrams of one reason.
    public func drops(_ reason: TransportDropReason) -> Int { drops[Self.index(of: reason)] }

    private static func index(of reason: TransportDropReason) -> Int {
        switch reason {
        case .iceRefused: 0
        case .notValidated: 1
        case .dtlsBeforeICE: 2
        case .srtpNotReady: 3
        case .srtpAuthentication: 4
        case .srtpReplay: 5
        case .malformed: 6
        case .unknownClass: 7
        }
    }

    public var isEmpty: Bool {
        goodbyesReceived == 0 && laneFanOuts == 0 && audioTicksLate == 0 && audioTicksDropped == 0
            && handshakesCompleted == 0 && handshakesFailed == 0 && downlinkEstimates.isEmpty
            && layerSwitchRates.isEmpty && drops.allSatisfy { $0 == 0 }
    }

    mutating func removeAll() {
        guard !isEmpty else { return }
        for index in drops.indices { drops[index] = 0 }
        goodbyesReceived = 0
        laneFanOuts = 0
        audioTicksLate = 0
        audioTicksDropped = 0
        handshakesCompleted = 0
        handshakesFailed = 0
        downlinkEstimates.removeAll(keepingCapacity: true)
        layerSwitchRates.removeAll(keepingCapacity: true)
    }
}
