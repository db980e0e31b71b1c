import AudioMixer
import ChorusCore
import DTLS
import ICELite
import Foundation
import Logging

/// One room's media policy as a sans-IO engine (str0m's `handle_input`/`poll_output` shape):
/// its participants and their transports, the audio mixer and mix encoders, the video slots.
/// Driven only through its entry points — `join`, `receive(datagram, from:, callId:, now:)`,
/// `tick(now:)`, `end`, `close`, `update` — each of which takes `now` and appends what must
/// happen to the caller's `RoomOutput`: datagrams to send, events, routing changes. It never
/// reads a clock, touches a socket or the router, or schedules anything; the `Room` actor is
/// the shell that does (its queue, its timer, the sink). Room-level tests drive a core directly
/// with client peers on a simulated clock.
///
/// A class, not a struct: it owns C state that cannot be copied (Opus encoders and decoders,
/// OpenSSL DTLS and SRTP contexts), and the hot paths reach into its participants in place from
/// nested calls that Swift's exclusivity rules would forbid on a mutating struct. Not
/// `Sendable`: its one owner confines it to one thread of control (the room's queue).
public final class RoomCore {
    public let key: RoomKey
    public private(set) var settings: RoomSettings
    public private(set) var isClosed = false
    let logger: Logger
    /// Nil for a room that only serves the control plane (tests): it refuses joins.
    let media: Media?
    let wallClock: WallClock
    var participants: [CallID: Participant] = [:]
    /// The 20 ms audio tick grid (a late timer is caught up without drift).
    var tickGrid = TickGrid(periodMilliseconds: RoomCore.tickMilliseconds)
    var mixer: RoomAudioMixer<CallID>
    /// The time of the step in progress: what events and wall-clock stamps use.
    var now = MediaTime(nanoseconds: 0)
    /// What the step in progress produced; swapped in from the caller's output at each entry
    /// point and back at its end (O(1), and the caller's buffers keep their capacity).
    var output = RoomOutput()
    var encoders = MixEncoders()
    /// One recipient's mix packet, rebuilt for each (kept for its capacity).
    var mixPacket: [UInt8] = []
    /// The same, one per lane of a fanned-out delivery (`RoomCore+Lanes`).
    var laneScratch: [[UInt8]] = []
    /// Ticks whose mixer inputs were prepared on several lanes so far.
    public internal(set) var laneInputFanOuts: UInt64 = 0
    /// Audio ticks run: the index of the current one during a tick (see `ParticipantAudio.outboundTick`).
    var audioTicks: UInt64 = 0
    /// Payloads delivered on several lanes so far.
    public internal(set) var laneFanOuts: UInt64 = 0
    /// Audio ticks that came due (for `RoomFaults`).
    var audioTicksDue: UInt64 = 0
    /// The once-a-second quality evaluation (`RoomCore+Quality`): when it is next due, and the
    /// room's own load (ticks that came due late in the last seconds).
    var nextQualityAt: MediaTime?
    /// The recording of the full mix in progress (`RoomCore+Recording`).
    var recording: RoomRecording?
    /// RTP forwards of the full mix (`RoomCore+Forwarding`).
    var forwarders: [MixForwarder] = []
    /// This tick's full-mix packet when something takes it (a recording, a forward).
    var fullMixTap: [UInt8]?
    var roomLoad = RoomLoad()
    /// Participants in the order they joined: the slot order of publishers nobody pinned.
    var joinOrder: [CallID] = []
    /// The same participants, in the same order: what the per-tick scans walk, so that a
    /// 1,000-participant tick does not hash a call ID per participant per scan.
    var members: [Participant] = []
    /// The members with a camera or video slots, in the same order (both are fixed at join):
    /// what the video tick's scans walk, so that an audio-only room of thousands visits nobody.
    var videoMembers: [Participant] = []
    /// The next stripe of once-a-second member work, and the stripes of this firing
    /// (`RoomCore+Stripes`).
    var stripeCursor = 0
    var dueStripes = (first: 0, count: 0)
    /// The room size from which that work is striped (a test lowers it).
    var stripedMemberMinimum = 200
    /// The same participants by their mixer slot (`RoomAudioMixer.Handle.slot`): how the tick
    /// finds a mix's recipients without hashing a call ID per recipient.
    var membersBySlot: [Participant?] = []
    /// The room's dominant speakers, most recent first: they rank next after pins for slots.
    var recentSpeakers: [CallID] = []
    /// Reused buffer for the packets the forwarder writes (one per slot, then protected).
    var videoScratch: [UInt8] = []
    /// For each publisher, the (subscriber, slot index) pairs showing it or switching to it:
    /// rebuilt when slots are reassigned, so a packet visits only its own viewers.
    var slotViewers: [CallID: [(subscriber: CallID, slot: Int)]] = [:]
    /// When the video tick last looked for slots still waiting on a keyframe.
    var lastKeyframeRepeatScan: MediaTime?

    /// What joins need from the process: the DTLS identity, the address announced in SDP
    /// candidates, and the mix encoders' settings.
    public struct Media: Sendable {
        public let dtls: DTLSContext
        public let candidateAddress: String
        public let candidatePort: UInt16
        public let audio: AudioEncoding
        public let consentTimeoutNanoseconds: UInt64
        public let candidateTCPPort: UInt16?
        public let additionalCandidateAddresses: [String]
        /// How many threads a big room's per-listener work may use at once (`RoomCore+Lanes`).
        public let lanes: Int
        /// Faults committed on purpose for tests (none by default).
        public let faults: RoomFaults

        public init(dtls: DTLSContext, candidateAddress: String, candidatePort: UInt16,
                    candidateTCPPort: UInt16? = nil, additionalCandidateAddresses: [String] = [],
                    audio: AudioEncoding = AudioEncoding(),
                    consentTimeoutNanoseconds: UInt64 = ConsentFreshness.defaultTimeoutNanoseconds,
                    lanes: Int = 1, faults: RoomFaults = RoomFaults()) {
            self.lanes = max(1, lanes)
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
    /// tick and the transports' timers (DTLS retransmissions, consent, RTCP reports).
    public static let tickMilliseconds = 20

    public init(key: RoomKey, settings: RoomSettings, media: Media?, wallClock: WallClock, logger: Logger) {
        self.key = key
        self.settings = settings
        self.media = media
        self.wallClock = wallClock
        self.logger = logger
        self.mixer = RoomAudioMixer(configuration: AudioMixerConfiguration(mixedSpeakers: settings.mixedSpeakers))
    }

    /// Runs one entry point's body with `output` as the core's output and `now` as its time.
    func step<T, E: Error>(at time: MediaTime, _ output: inout RoomOutput, _ body: () throws(E) -> T) throws(E) -> T {
        now = time
        swap(&self.output, &output)
        defer { swap(&self.output, &output) }
        return try body()
    }

    /// Records an event for the shell to publish.
    func emit(_ name: RoomEventName, _ fields: [String: EventField]) {
        output.events.append(RoomCoreEvent(name: name.rawValue, fields: fields, at: now))
    }

    /// Applies new settings; a closed room refuses them. A new `mixedSpeakers` takes effect at
    /// the next tick; the others apply to later joins.
    public func update(settings newSettings: RoomSettings) throws(RoomError) {
        guard !isClosed else { throw .closed }
        if newSettings.mixedSpeakers != settings.mixedSpeakers { mixer.setMixedSpeakers(newSettings.mixedSpeakers) }
        settings = newSettings
    }

    /// Closes the room: every participant ends with `cause`, then `room.closed`. Returns true
    /// on the call that closed it (idempotent).
    @discardableResult
    public func close(cause: EndCause = .roomClosed, now time: MediaTime, into output: inout RoomOutput) -> Bool {
        guard !isClosed else { return false }
        step(at: time, &output) {
            for callId in participants.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
                endCall(callId, cause: cause)
            }
            isClosed = true
            emit(.roomClosed, ["roomId": .string(key.room.rawValue)])
        }
        return true
    }

    /// The number of speakers the running mixer holds (follows `settings.mixedSpeakers`).
    public var mixedSpeakersInEffect: Int { mixer.configuration.mixedSpeakers }

    /// Participants not yet ended.
    public var activeCount: Int { participants.count }

    /// Whether the room's clock must tick: it has participants, or something takes its mix (a
    /// recording or a forward goes on through an empty stretch, silence included).
    public var needsTicks: Bool { !participants.isEmpty || tapsFullMix }

    /// Distinct encodes so far (tests check the per-tick bound through this).
    public var audioEncodeCount: UInt64 { encoders.encodes }
    /// Speakers' own-mix encoders started as a continuation of the full mix's stream.
    public var audioEncoderContinuations: UInt64 { encoders.continuations }
}

/// Errors a room's control calls can raise; the API maps each to a status and code.
public enum RoomError: Error, Equatable, Sendable {
    case closed
    case alreadyExists
    case notFound
}
