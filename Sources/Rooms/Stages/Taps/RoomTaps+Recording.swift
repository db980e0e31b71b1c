import AudioMixer
import ChorusCore

/// The recording in progress (see `RoomTaps`): the full mix's Ogg Opus stream, and each
/// member's track when asked.
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

/// What a recording's per-member tracks are fed each tick: an established member that sends
/// Opus, what its jitter buffer played (nil before its capture began) and whether it was muted.
struct TapTrackInput {
    let callId: CallID
    let userId: UserID
    let played: [JitterBufferedDecoder.PlayedAudio]?
    let muted: Bool
}

extension RoomTaps {
    /// Starts recording the full mix (and with `perParticipant`, each member's own audio); the
    /// file's header pages are the step's first write.
    mutating func startRecording(id: String, perParticipant: Bool, into output: inout RoomOutput)
        throws(RecordingError)
    {
        if let active = recording { throw .alreadyRecording(id: active.id) }
        guard let silence = OpusSilence.encoded() else { throw .unavailable("no Opus encoder for the silence frames") }
        var writer = OggOpusWriter(serial: UInt32.random(in: 1...UInt32.max), silence: silence)
        let header = writer.begin()
        recording = RoomRecording(id: id, writer: writer, silence: silence, perParticipant: perParticipant)
        output.recordingWrites.append(header)
    }

    /// Stops the recording in progress (nil if none): its tracks' and its own last pages are the
    /// step's last writes. Returns the members whose playout need no longer be captured too.
    mutating func stopRecording(into output: inout RoomOutput) -> (summary: RecordingSummary, tracked: [CallID])? {
        guard recording != nil else { return nil }
        let tracked = recording?.tracks.keys.sorted(by: { $0.rawValue < $1.rawValue }) ?? []
        for id in tracked { endTrack(id, into: &output) }
        guard var active = recording else { return nil }
        output.recordingWrites.append(active.writer.finish())
        recording = nil
        return (RecordingSummary(id: active.id, durationSeconds: active.writer.duration, tracks: active.endedTracks), tracked)
    }

    /// The recording's ID, while one runs.
    var recordingId: String? { recording?.id }

    /// Whether each member's own audio is recorded too.
    var recordsTracks: Bool { recording?.perParticipant == true }

    /// Ticks the room's grid gave up on (a stall longer than it catches up, on an overloaded
    /// machine) become silence, so a 20 s recording lasts 20 s and the tracks stay lined up with
    /// the mix (their writers fill up to the same count).
    mutating func recordSkippedTicks(now: MediaTime, into output: inout RoomOutput) {
        // Fields read through the optional: a copy of the recording would retain its buffers.
        guard let ticks = recording?.ticks else { return }
        guard let first = recording?.firstTickAt else {
            recording?.firstTickAt = now
            return
        }
        let expected = (now.nanoseconds(since: first) + 10_000_000) / 20_000_000
        guard expected > ticks else { return }
        // At most a minute per tick: a longer stall is filled over the next ticks.
        for _ in 0..<min(expected - ticks, 3_000) { recordTick(nil, into: &output) }
    }

    /// At the end of each audio tick: the tick's full-mix packet (or silence) into the stream.
    mutating func recordTick(_ packet: [UInt8]?, into output: inout RoomOutput) {
        // Mutated in place through the optional: a copy would copy the writer's pending page.
        guard let page = recording?.writer.append(packet) else { return }
        recording?.ticks += 1
        if !page.isEmpty { output.recordingWrites.append(page) }
    }

    /// After the mixer took this tick's frames: each established Opus member's played packets
    /// into its track (started on its first tick; returned, so its playout is captured from the
    /// next tick). A muted member's track gets silence: the recording keeps only what the room
    /// could hear. Only Opus senders have tracks (their packets go in as they are; other codecs
    /// would need a transcode).
    mutating func recordTracks(_ members: [TapTrackInput], into output: inout RoomOutput) -> [CallID] {
        guard recordsTracks else { return [] }
        var started: [CallID] = []
        for member in members {
            guard recording?.tracks[member.callId] != nil, let played = member.played else {
                if recording?.tracks[member.callId] == nil {
                    startTrack(member.callId, userId: member.userId, into: &output)
                    started.append(member.callId)
                }
                continue
            }
            let muted = member.muted
            writeTrack(member.callId, into: &output) { writer in
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
        return started
    }

    private mutating func startTrack(_ callId: CallID, userId: UserID, into output: inout RoomOutput) {
        guard let active = recording else { return }
        var writer = OggOpusWriter(serial: UInt32.random(in: 1...UInt32.max), silence: active.silence)
        let offset = active.ticks
        let header = writer.begin(comments: [
            "TITLE=\(userId.rawValue)", "CHORUS_RECORDING_ID=\(active.id)",
            "CHORUS_CALL_ID=\(callId.rawValue)", "CHORUS_USER_ID=\(userId.rawValue)",
            "CHORUS_OFFSET_MS=\(offset * 20)",
        ])
        recording?.tracks[callId] = RecordingTrack(callId: callId, userId: userId, offsetTicks: offset, writer: writer)
        output.trackWrites.append(RecordingTrackWrite(callId: callId, bytes: header, closes: false))
        writeTrack(callId, into: &output) { _ in [] }  // this tick was played before the capture began
    }

    /// Runs `body` on a track's writer, then fills what the room's clock played beyond what the
    /// body wrote (a tick before the sender's first packet, ticks lost to a stall) with silence,
    /// up to the end of this tick on the mix's timeline.
    private func writeTrack(_ callId: CallID, into output: inout RoomOutput, _ body: (inout OggOpusWriter) -> [UInt8]) {
        guard let track = recording?.tracks[callId], let recorded = recording?.ticks else { return }
        var bytes = body(&track.writer)
        let ticks = recorded + 1
        let due = (ticks > track.offsetTicks ? ticks - track.offsetTicks : 0) * UInt64(AudioCodecFormat.frameSamples)
        if track.writer.samplesWritten < due {
            bytes += track.writer.appendSilence(samples: Int(due - track.writer.samplesWritten))
        }
        if !bytes.isEmpty { output.trackWrites.append(RecordingTrackWrite(callId: callId, bytes: bytes, closes: false)) }
    }

    /// A member left (or the recording stops): its track's last page, and its summary. True
    /// when it had a track.
    @discardableResult
    mutating func endTrack(_ callId: CallID, into output: inout RoomOutput) -> Bool {
        guard let track = recording?.tracks.removeValue(forKey: callId) else { return false }
        let last = track.writer.finish()
        recording?.endedTracks.append(track.summary)
        output.trackWrites.append(RecordingTrackWrite(callId: callId, bytes: last, closes: true))
        return true
    }
}
