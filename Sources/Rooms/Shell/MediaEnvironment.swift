import Foundation
import AudioMixer
import ChorusCore
import DTLS
import ICELite

/// What every room needs from the process to run media: the DTLS identity, the media port's
/// sink and routing table, the address announced in SDP candidates, and the clock. Built once
/// by the composition root; a test can build one over a capturing sink, a plain router and its
/// own clock.
public struct MediaEnvironment: Sendable {
    public let dtls: DTLSContext
    public let sink: any DatagramSink
    public let routing: any MediaRouting
    public let candidateAddress: String
    public let candidatePort: UInt16
    /// The ICE-TCP port announced as a passive TCP candidate; nil when ICE-TCP is off.
    public let candidateTCPPort: UInt16?
    /// More announced addresses (`--public-ip` given more than once), each with its candidates.
    public let additionalCandidateAddresses: [String]
    public let audio: AudioEncoding
    public let clock: any RoomClock
    /// How long a participant may go without proving it is there (a consent check, or
    /// authenticated media from its selected address) before its call ends with `timeout`;
    /// also how long a join may take to see its first check. RFC 7675 §5.1: 30 s.
    public let consentTimeoutNanoseconds: UInt64
    /// How many threads one big room's per-listener work may use at once (`AudioStage+Lanes`):
    /// by default one per core.
    public let lanes: Int
    /// Faults committed on purpose for tests (`RoomFaults`; none by default).
    public let faults: RoomFaults
    /// What fires the ticks of rooms small enough to tick on another thread's wake-up (the
    /// media port's reader, `Room+Ticks`); nil: every room ticks on a timer of its own.
    public let ticks: (any TickSource)?

    public init(dtls: DTLSContext, sink: any DatagramSink, routing: any MediaRouting, candidateAddress: String,
                candidatePort: UInt16, candidateTCPPort: UInt16? = nil, additionalCandidateAddresses: [String] = [],
                audio: AudioEncoding = AudioEncoding(),
                clock: any RoomClock = SystemRoomClock(),
                consentTimeoutNanoseconds: UInt64 = ConsentFreshness.defaultTimeoutNanoseconds,
                lanes: Int = ProcessInfo.processInfo.activeProcessorCount, ticks: (any TickSource)? = nil,
                faults: RoomFaults = RoomFaults()) {
        self.lanes = max(1, lanes)
        self.ticks = ticks
        self.faults = faults
        self.audio = audio
        self.consentTimeoutNanoseconds = consentTimeoutNanoseconds
        self.dtls = dtls
        self.sink = sink
        self.routing = routing
        self.candidateAddress = candidateAddress
        self.candidatePort = candidatePort
        self.candidateTCPPort = candidateTCPPort
        self.additionalCandidateAddresses = additionalCandidateAddresses
        self.clock = clock
    }

    /// The part a room's core uses (joins and encodes, no I/O).
    var core: RoomCore.Media {
        RoomCore.Media(dtls: dtls, candidateAddress: candidateAddress, candidatePort: candidatePort,
                       candidateTCPPort: candidateTCPPort, additionalCandidateAddresses: additionalCandidateAddresses,
                       audio: audio,
                       consentTimeoutNanoseconds: consentTimeoutNanoseconds, lanes: lanes,
                       laneRunner: ConcurrentLanes(), faults: faults)
    }
}

/// Receives a room's events outside the room (the call-record writer, metrics). Called on the
/// room's queue: it must only hand the event over, never block.
public typealias RoomEventObserver = @Sendable (RoomKey, RoomEventRecord) -> Void

/// Opus settings of the room's mix encoders. Defaults measured on the 2-core machine:
/// complexity 5 costs ~120 µs per 20 ms frame (10 costs ~310 µs), and 32 kbit/s mono is
/// transparent for speech.
public struct AudioEncoding: Sendable, Equatable {
    public var bitrate: Int
    public var complexity: Int
    /// Hybrid (`voip`, the default) or CELT-only mixes: a CPU-for-quality trade.
    public var mode: OpusEncoder.Mode

    public init(bitrate: Int = 32_000, complexity: Int = 5, mode: OpusEncoder.Mode = .voip) {
        self.bitrate = bitrate
        self.complexity = complexity
        self.mode = mode
    }
}
