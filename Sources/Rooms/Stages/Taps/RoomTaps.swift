import AudioMixer
import ChorusCore

/// What takes the room's full mix besides its listeners: the recording (the mix from the
/// packets the room already encodes or relays for its listeners, one per 20 ms tick, with no
/// second encode; and, when asked, each member's own Opus packets as the room played them out
/// of its jitter buffer, no transcoding, into a file of its own) and the RTP forwards (the same
/// packet to a host and port, for transcription or streaming engines). A tick without a packet
/// (a silent mix, a DTX pause, a loss) is filled with cached silence in the files, so every
/// file's timeline is the room's clock and a track's offset places it exactly against the mix.
///
/// A value the room core owns and drives: `startRecording`/`stopRecording`, `addForwarder`/
/// `removeForwarder`, `tick` after each audio tick with the tick's full-mix packet and the
/// tracked members' playout, `memberLeft`. It makes bytes (`RoomOutput.recordingWrites`,
/// `trackWrites`) and datagrams; the shell writes the files. While it taps the mix, the audio
/// stage produces the full mix even when every member is a speaker, and the room keeps ticking
/// while it is empty (its silence is recorded too).
struct RoomTaps {
    var recording: RoomRecording?
    var forwarders: [MixForwarder] = []

    /// Whether something takes the full mix every tick (a recording, a forward).
    var tapsFullMix: Bool { recording != nil || !forwarders.isEmpty }

    /// After each audio tick: ticks the grid dropped as silence, the members' tracks, the mix's
    /// packet into the recording and out to each forward. Returns the members whose tracks
    /// began (their playout must be captured from now on).
    mutating func tick(now: MediaTime, fullMix: [UInt8]?, tracks: [TapTrackInput], into output: inout RoomOutput)
        -> [CallID]
    {
        recordSkippedTicks(now: now, into: &output)
        let started = recordTracks(tracks, into: &output)
        recordTick(fullMix, into: &output)
        forwardTick(fullMix, into: &output)
        return started
    }

    /// A member left: its track, if any, ends.
    mutating func memberLeft(_ callId: CallID, into output: inout RoomOutput) {
        endTrack(callId, into: &output)
    }
}
