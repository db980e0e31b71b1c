import AudioMixer
import ChorusCore

/// Recording the room (issue 19): the full mix from the packets the room already encodes (or
/// relays) for its listeners, one per 20 ms tick, with no second encode; and, when asked, each
/// participant's own Opus packets as the room played them out of its jitter buffer (no
/// transcoding) into a file of its own. A tick without a packet (a silent mix, a DTX pause, a
/// loss) is filled with cached silence packets, so every file's timeline is the room's clock
/// and a track's offset from the recording's start places it exactly against the mix. The core
/// makes the bytes (`RoomOutput.recordingWrites`, `trackWrites`); the shell appends them to the
/// files. While a recording runs the mixer produces the full mix even when every participant is
/// a speaker, and the room keeps ticking while it is empty (its silence is recorded too).
struct RoomRecording {
    let id: String
    var writer: OggOpusWriter
    let silence: OpusSilence
    /// Whether each participant's own audio also goes to a track of its own.
    let perParticipant: Bool
    /// Ticks recorded so far: where a track starting now sits in the mix's timeline.
    var ticks: UInt64 = 0
    /// The first recorded tick's time: the files keep wall-clock time from there.
    var firstTickAt: MediaTime?
    var tracks: [CallID: RecordingTrack] = [:]
    var endedTracks: [RecordingTrackSummary] = []
}

/// One participant's track of a recording: its own packets, from `offsetTicks` on. A class so
/// the per-tick writes mutate its writer in place (a struct copied out of the dictionary and
/// back would copy the writer's pending page every tick).
final class RecordingTrack {
    let callId: CallID
    let userId: UserID
    let offsetTicks: UInt64
    var writer: OggOpusWriter

    init(callId: CallID, userId: UserID, offsetTicks: UInt64, writer: OggOpusWriter) {
        self.callId = callId
        self.userId = userId
        self.offsetTicks = offsetTicks
        self.writer = writer
    }

    var summary: RecordingTrackSummary {
        RecordingTrackSummary(callId: callId, userId: userId, offsetSeconds: Double(offsetTicks) * 0.02,
                              durationSeconds: writer.duration)
    }
}

/// Why a recording cannot start.
public enum RecordingError: Error, Equatable, Sendable {
    case alreadyRecording(id: String)
    case roomClosed
    case unavailable(String)
}

/// A recording that ended: its ID, how long it is, and its participants' tracks.
public struct RecordingSummary: Sendable, Equatable {
    public let id: String
    public let durationSeconds: Double
    public var tracks: [RecordingTrackSummary]
}

/// One participant's track of a recording: whose, where it starts against the mix, how long.
public struct RecordingTrackSummary: Sendable, Equatable {
    public let callId: CallID
    public let userId: UserID
    public let offsetSeconds: Double
    public let durationSeconds: Double
}

/// Bytes for one participant's track file, in order: its first write creates the file, the
/// one that `closes` is its last.
public struct RecordingTrackWrite: Sendable, Equatable {
    public let callId: CallID
    public let bytes: [UInt8]
    public let closes: Bool
}

extension RoomCore {
    /// Starts recording the full mix (and with `perParticipant`, each participant's own audio);
    /// the file's header pages are the step's first write.
    public func startRecording(id: String, perParticipant: Bool = false, now time: MediaTime,
                               into output: inout RoomOutput) throws(RecordingError)
    {
        if let active = recording { throw .alreadyRecording(id: active.id) }
        guard !isClosed else { throw .roomClosed }
        guard let silence = OpusSilence.encoded() else { throw .unavailable("no Opus encoder for the silence frames") }
        var writer = OggOpusWriter(serial: UInt32.random(in: 1...UInt32.max), silence: silence)
        let header = writer.begin()
        step(at: time, &output) {
            recording = RoomRecording(id: id, writer: writer, silence: silence, perParticipant: perParticipant)
            mixer.alwaysMixFull = true
            self.output.recordingWrites.append(header)
        }
    }

    /// Stops the recording in progress (nil if none): its last pages are the step's last writes.
    @discardableResult
    public func stopRecording(now time: MediaTime, into output: inout RoomOutput) -> RecordingSummary? {
        guard recording != nil else { return nil }
        return step(at: time, &output) {
            for id in recording?.tracks.keys.sorted(by: { $0.rawValue < $1.rawValue }) ?? [] { endTrack(id) }
            guard var active = recording else { return nil }
            self.output.recordingWrites.append(active.writer.finish())
            recording = nil
            mixer.alwaysMixFull = tapsFullMix
            return RecordingSummary(id: active.id, durationSeconds: active.writer.duration, tracks: active.endedTracks)
        }
    }

    /// The recording's ID, while one runs.
    public var recordingId: String? { recording?.id }

    /// Before each audio tick's own audio: ticks the room's grid gave up on (a stall longer than
    /// it catches up, on an overloaded machine) become silence, so a 20 s recording lasts 20 s
    /// and the tracks stay lined up with the mix (their writers fill up to the same count).
    func recordSkippedTicks(now: MediaTime) {
        // Fields read through the optional: a copy of the recording would retain its buffers.
        guard let ticks = recording?.ticks else { return }
        guard let first = recording?.firstTickAt else {
            recording?.firstTickAt = now
            return
        }
        let expected = (now.nanoseconds(since: first) + 10_000_000) / 20_000_000
        guard expected > ticks else { return }
        // At most a minute per tick: a longer stall is filled over the next ticks.
        for _ in 0..<min(expected - ticks, 3_000) { recordTick(nil) }
    }

    /// At the end of each audio tick: the tick's full-mix packet (or silence) into the stream.
    func recordTick(_ packet: [UInt8]?) {
        // Mutated in place through the optional: a copy would copy the writer's pending page.
        guard let page = recording?.writer.append(packet) else { return }
        recording?.ticks += 1
        if !page.isEmpty { output.recordingWrites.append(page) }
    }

    /// After the mixer took this tick's frames: each established participant's played packets
    /// into its track (started on its first tick). A muted participant's track gets silence:
    /// the recording keeps only what the room could hear. Only Opus senders have tracks (their
    /// packets go in as they are; other codecs would need a transcode).
    func recordTracks() {
        guard recording?.perParticipant == true else { return }
        for participant in members where participant.state == .established && participant.audio.receive.decoder is OpusDecoder {
            guard recording?.tracks[participant.callId] != nil else {
                startTrack(participant)
                continue
            }
            let played = participant.audio.receive.playout
            let muted = participant.audioMuted
            writeTrack(participant.callId) { writer in
                var bytes: [UInt8] = []
                for item in played {
                    switch item {
                    case .packet(let packet, let samples) where !muted: bytes += writer.append(packet: packet, samples: samples)
                    case .packet(_, let samples), .gap(let samples): bytes += writer.appendSilence(samples: samples)
                    }
                }
                return bytes
            }
        }
    }

    private func startTrack(_ participant: Participant) {
        guard let active = recording else { return }
        var writer = OggOpusWriter(serial: UInt32.random(in: 1...UInt32.max), silence: active.silence)
        let offset = active.ticks
        let header = writer.begin(comments: [
            "TITLE=\(participant.userId.rawValue)", "CHORUS_RECORDING_ID=\(active.id)",
            "CHORUS_CALL_ID=\(participant.callId.rawValue)", "CHORUS_USER_ID=\(participant.userId.rawValue)",
            "CHORUS_OFFSET_MS=\(offset * 20)",
        ])
        recording?.tracks[participant.callId] = RecordingTrack(
            callId: participant.callId, userId: participant.userId, offsetTicks: offset, writer: writer)
        participant.audio.receive.capturesPlayout = true
        output.trackWrites.append(RecordingTrackWrite(callId: participant.callId, bytes: header, closes: false))
        writeTrack(participant.callId) { _ in [] }  // this tick was played before the capture began
    }

    /// Runs `body` on a track's writer, then fills what the room's clock played beyond what the
    /// body wrote (a tick before the sender's first packet, ticks lost to a stall) with silence,
    /// up to the end of this tick on the mix's timeline.
    private func writeTrack(_ callId: CallID, _ body: (inout OggOpusWriter) -> [UInt8]) {
        guard let track = recording?.tracks[callId], let recorded = recording?.ticks else { return }
        var bytes = body(&track.writer)
        let ticks = recorded + 1
        let due = (ticks > track.offsetTicks ? ticks - track.offsetTicks : 0) * UInt64(AudioCodecFormat.frameSamples)
        if track.writer.samplesWritten < due {
            bytes += track.writer.appendSilence(samples: Int(due - track.writer.samplesWritten))
        }
        if !bytes.isEmpty { output.trackWrites.append(RecordingTrackWrite(callId: callId, bytes: bytes, closes: false)) }
    }

    /// A participant left (or the recording stops): its track's last page, and its summary.
    func endTrack(_ callId: CallID) {
        guard let track = recording?.tracks.removeValue(forKey: callId) else { return }
        let last = track.writer.finish()
        recording?.endedTracks.append(track.summary)
        participants[callId]?.audio.receive.capturesPlayout = false
        output.trackWrites.append(RecordingTrackWrite(callId: callId, bytes: last, closes: true))
    }
}
