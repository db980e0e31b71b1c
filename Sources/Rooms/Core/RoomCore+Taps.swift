import ChorusCore

extension RoomCore {
    /// Starts recording the full mix (and with `perParticipant`, each member's own audio); the
    /// file's header pages are the step's first write.
    public func startRecording(id: String, perParticipant: Bool = false, now: MediaTime,
                               into output: inout RoomOutput) throws(RecordingError) {
        guard !isClosed else { throw .roomClosed }
        try taps.startRecording(id: id, perParticipant: perParticipant, into: &output)
        audio.tapsFullMix = taps.tapsFullMix
    }

    /// Stops the recording in progress (nil if none): its last pages are the step's last writes.
    @discardableResult
    public func stopRecording(now: MediaTime, into output: inout RoomOutput) -> RecordingSummary? {
        guard let stopped = taps.stopRecording(into: &output) else { return nil }
        for callId in stopped.tracked {
            if let member = members[callId] { audio.capturePlayout(member.audio, false) }
        }
        audio.tapsFullMix = taps.tapsFullMix
        return stopped.summary
    }

    /// The recording's ID, while one runs.
    public var recordingId: String? { taps.recordingId }

    /// At most this many forwards per room.
    public static var maxForwarders: Int { RoomTaps.maxForwarders }

    public func addForwarder(_ request: ForwarderRequest) throws(RecordingError) {
        guard !isClosed else { throw .roomClosed }
        try taps.addForwarder(request)
        audio.tapsFullMix = taps.tapsFullMix
    }

    @discardableResult
    public func removeForwarder(id: String) -> Bool {
        let removed = taps.removeForwarder(id: id)
        audio.tapsFullMix = taps.tapsFullMix
        return removed
    }

    public var forwarderSnapshots: [ForwarderSnapshot] { taps.forwarderSnapshots }
}
