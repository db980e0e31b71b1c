import AudioMixer
import ChorusCore
import DTLS
import Foundation
import ICELite
import Logging

/// One room as a sans-IO engine (str0m's `handle_input`/`poll_output` shape): the member table,
/// and the router between the stages that own the room's media —
///
/// - `AudioStage`: jitter buffers, the mixer, the shared encodes, each listener's stream;
/// - `VideoRouter`: cameras forwarded into slots, layers, keyframes, NACK/RTX;
/// - `BandwidthStage`: each member's downlink (estimate or REMB), its samples, the probes;
/// - `QualityMonitor`: each call's quality warnings and MOS, and the room's own load;
/// - `RoomTaps`: the recording and the RTP forwards of the full mix.
///
/// A member joins through one seam whatever its kind (`MemberMedia` + `MemberConnection`): a
/// WebRTC peer, a plain-RTP phone, and later a link to another node; no stage asks which. The
/// core routes what a member's connection returns to the stage it concerns, and what one stage
/// learns that another needs (the dominant speaker, a subscriber's budget) through its own
/// calls: no stage reads or writes another's state.
///
/// Driven only through its entry points — `join`/`admit`, `receive(datagram, from:, callId:,
/// now:)`, `tick(now:)`, `end`, `close`, `update` — each of which takes `now` and appends what
/// must happen to the caller's `RoomOutput`: datagrams, events, routing changes, file bytes,
/// counts for `/metrics`. It never reads a clock, touches a socket, starts a thread (a big
/// room's lanes run on the shell's `LaneRunner`) or writes global state; the `Room` actor is the
/// shell that does. Room-level tests drive a core directly with client peers on a simulated
/// clock.
///
/// A class, not a struct: its stages own C state that cannot be copied (Opus, OpenSSL), and its
/// one owner confines it to one thread of control (the room's queue); not `Sendable`.
public final class RoomCore {
    public let key: RoomKey
    public private(set) var settings: RoomSettings
    public private(set) var isClosed = false
    let logger: Logger
    /// Nil for a room that only serves the control plane (tests): it refuses joins.
    let media: Media?
    public let wallClock: WallClock
    /// The member table: each member by its call, and all of them in the order they joined.
    var members: [CallID: Member] = [:]
    var joinOrder: [Member] = []
    var audio: AudioStage
    var video = VideoRouter()
    var bandwidth = BandwidthStage()
    var quality = QualityMonitor()
    var taps = RoomTaps()
    /// The 20 ms audio tick grid (a late timer is caught up without drift).
    var tickGrid = TickGrid(periodMilliseconds: RoomCore.tickMilliseconds)
    /// The stripes of once-a-second member work, and the room size from which they are used
    /// (a test lowers it).
    var stripes = MemberStripes()
    var stripedMemberMinimum = 200
    /// Audio ticks that came due (for `RoomFaults`).
    var audioTicksDue: UInt64 = 0

    /// What joins need from the process: the DTLS identity, the address announced in SDP
    /// candidates, the mix encoders' settings, and who runs a big room's lanes.
    public struct Media: Sendable {
        public let dtls: DTLSContext
        public let candidateAddress: String
        public let candidatePort: UInt16
        public let audio: AudioEncoding
        public let consentTimeoutNanoseconds: UInt64
        public let candidateTCPPort: UInt16?
        public let additionalCandidateAddresses: [String]
        /// How many lanes a big room's per-listener work may use at once (`AudioStage+Lanes`),
        /// and what runs them (the shell's threads; by default one after another).
        public let lanes: Int
        public let laneRunner: any LaneRunner
        /// Faults committed on purpose for tests (none by default).
        public let faults: RoomFaults

        public init(dtls: DTLSContext, candidateAddress: String, candidatePort: UInt16,
                    candidateTCPPort: UInt16? = nil, additionalCandidateAddresses: [String] = [],
                    audio: AudioEncoding = AudioEncoding(),
                    consentTimeoutNanoseconds: UInt64 = ConsentFreshness.defaultTimeoutNanoseconds,
                    lanes: Int = 1, laneRunner: any LaneRunner = SerialLanes(), faults: RoomFaults = RoomFaults()) {
            self.lanes = max(1, lanes)
            self.laneRunner = laneRunner
            self.faults = faults
            self.candidateTCPPort = candidateTCPPort
            self.additionalCandidateAddresses = additionalCandidateAddresses
            self.consentTimeoutNanoseconds = consentTimeoutNanoseconds
            self.dtls = dtls
            self.candidateAddress = candidateAddress
            self.candidatePort = candidatePort
            self.audio = audio
        }
    }

    /// Room tick: 20 ms, the audio frame length the mixer runs on; it also drives the video
    /// tick and the connections' timers (DTLS retransmissions, consent, RTCP reports).
    public static let tickMilliseconds = 20

    public init(key: RoomKey, settings: RoomSettings, media: Media?, wallClock: WallClock, logger: Logger) {
        self.key = key
        self.settings = settings
        self.media = media
        self.wallClock = wallClock
        self.logger = logger
        audio = AudioStage(mixedSpeakers: settings.mixedSpeakers, encoding: media?.audio ?? AudioEncoding(),
                           lanes: media?.lanes ?? 1, laneRunner: media?.laneRunner ?? SerialLanes())
    }

    /// Applies new settings; a closed room refuses them. A new `mixedSpeakers` takes effect at
    /// the next tick; the others apply to later joins.
    public func update(settings newSettings: RoomSettings) throws(RoomError) {
        guard !isClosed else { throw .closed }
        if newSettings.mixedSpeakers != settings.mixedSpeakers { audio.setMixedSpeakers(newSettings.mixedSpeakers) }
        settings = newSettings
    }

    /// Closes the room: every member ends with `cause`, then `room.closed`. Returns true on the
    /// call that closed it (idempotent).
    @discardableResult
    public func close(cause: EndCause = .roomClosed, now: MediaTime, into output: inout RoomOutput) -> Bool {
        guard !isClosed else { return false }
        for callId in members.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            endCall(callId, cause: cause, now: now, into: &output)
        }
        isClosed = true
        output.emit(.roomClosed(roomId: key.room), at: now)
        return true
    }

    /// The number of speakers the running mixer holds (follows `settings.mixedSpeakers`).
    public var mixedSpeakersInEffect: Int { audio.mixedSpeakers }

    /// Members not yet ended.
    public var activeCount: Int { members.count }

    /// Whether the room's clock must tick: it has members, or something takes its mix (a
    /// recording or a forward goes on through an empty stretch, silence included).
    public var needsTicks: Bool { !members.isEmpty || taps.tapsFullMix }

    /// Distinct encodes so far (tests check the per-tick bound through this).
    public var audioEncodeCount: UInt64 { audio.encodeCount }
    /// Speakers' own-mix encoders started as a continuation of the full mix's stream.
    public var audioEncoderContinuations: UInt64 { audio.continuations }
    /// Audio ticks run so far.
    public var audioTicks: UInt64 { audio.ticks }
    /// Payloads delivered on several lanes, and ticks whose mixer inputs were made on several.
    public var laneFanOuts: UInt64 { audio.laneFanOuts }
    public var laneInputFanOuts: UInt64 { audio.laneInputFanOuts }
    /// The grid time of the next audio tick, nil before the first firing.
    public var nextTickAt: MediaTime? { tickGrid.next }

    /// What the video router may send a subscriber (the bandwidth stage's answer; passed to
    /// the router as a non-escaping closure, so nothing is allocated per packet).
    func budget(of callId: CallID) -> VideoBudget? { bandwidth.budget(of: callId) }
}

/// Errors a room's control calls can raise; the API maps each to a status and code.
public enum RoomError: Error, Equatable, Sendable {
    case closed
    case alreadyExists
    case notFound
}
