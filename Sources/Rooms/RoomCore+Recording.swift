import AudioMixer
import ChorusCore

/// Recording the room's full mix (issue 19): the packets the room already encodes (or relays)
/// for its listeners go into an Ogg Opus stream, one per 20 ms tick, with no second encode. A
/// tick without a packet (a silent mix, a DTX pause) is filled with a cached silence packet, so
/// the file's timeline is the room's clock. The core makes the bytes (`RoomOutput.recordingWrites`);
/// the shell appends them to the file. While a recording runs the mixer produces the full mix
/// even when every participant is a speaker.
struct RoomRecording {
    let id: String
    var writer: OggOpusWriter
}

/// Why a recording cannot start.
public enum RecordingError: Error, Equatable, Sendable {
    case alreadyRecording(id: String)
    case roomClosed
    case unavailable(String)
}

/// A recording that ended: its ID and how long it is.
public struct RecordingSummary: Sendable, Equatable {
    public let id: String
    public let durationSeconds: Double
}

extension RoomCore {
    /// Starts recording the full mix; the file's header pages are the step's first write.
    public func startRecording(id: String, now time: MediaTime, into output: inout RoomOutput)
        throws(RecordingError)
    {
        if let active = recording { throw .alreadyRecording(id: active.id) }
        guard !isClosed else { throw .roomClosed }
        guard let silence = Self.silencePacket() else { throw .unavailable("no Opus encoder for the silence frame") }
        var writer = OggOpusWriter(serial: UInt32.random(in: 1...UInt32.max), silence: silence)
        let header = writer.begin()
        step(at: time, &output) {
            recording = RoomRecording(id: id, writer: writer)
            mixer.alwaysMixFull = true
            self.output.recordingWrites.append(header)
        }
    }

    /// Stops the recording in progress (nil if none): its last page is the step's last write.
    @discardableResult
    public func stopRecording(now time: MediaTime, into output: inout RoomOutput) -> RecordingSummary? {
        guard var active = recording else { return nil }
        return step(at: time, &output) {
            let last = active.writer.finish()
            self.output.recordingWrites.append(last)
            recording = nil
            mixer.alwaysMixFull = tapsFullMix
            return RecordingSummary(id: active.id, durationSeconds: active.writer.duration)
        }
    }

    /// The recording's ID, while one runs.
    public var recordingId: String? { recording?.id }

    /// At the end of each audio tick: the tick's full-mix packet (or silence) into the stream.
    func recordTick(_ packet: [UInt8]?) {
        guard var active = recording else { return }
        let page = active.writer.append(packet)
        recording = active
        if !page.isEmpty { output.recordingWrites.append(page) }
    }

    /// 20 ms of silence from a fresh encoder (the room's mix settings): what fills a tick without
    /// a packet. Encoded once per recording; a lone Opus packet decodes on its own.
    static func silencePacket() -> [UInt8]? {
        guard let encoder = try? OpusEncoder() else { return nil }
        let zeros = [Int16](repeating: 0, count: 960)
        var packet: [UInt8] = []
        for _ in 0..<3 { packet = (try? encoder.encode(zeros)) ?? [] }
        return packet.isEmpty ? nil : packet
    }
}
