import ChorusCore
import Dispatch
import Foundation

/// The file a room's recording goes to: bytes appended in order on a serial queue of its own, so
/// the room's queue never waits on the disk. Each page is written as it comes (one a second), so
/// a `kill -9` leaves a file that plays up to its last page. A write that fails (a full disk)
/// marks the file failed; the room then stops the recording and says so.
/// `@unchecked Sendable`: `handle` and `bytes` are touched only on `queue`; `failure` is written
/// there and read by the room under `failureLock`, so the room never waits for the disk.
final class RecordingFile: @unchecked Sendable {
    let path: String
    private let queue = DispatchQueue(label: "chorus.recording")
    private let handle: FileHandle
    private let failureLock = NSLock()
    private var failure: String?
    private var bytes = 0

    init(path: String) throws {
        let url = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw RecordingError.unavailable("cannot create \(path)")
        }
        handle = try FileHandle(forWritingTo: url)
        self.path = path
    }

    func append(_ chunks: [[UInt8]]) {
        queue.async {
            guard self.failed == nil else { return }
            for chunk in chunks {
                do {
                    try self.handle.write(contentsOf: chunk)
                    self.bytes += chunk.count
                } catch {
                    self.failureLock.withLock { self.failure = "\(error)" }
                    return
                }
            }
        }
    }

    /// Why writing failed, if a write has (without waiting for the writes still queued).
    var failed: String? { failureLock.withLock { failure } }

    /// Waits for the queued writes, syncs the file to disk and closes it; the bytes written.
    func close() -> Int {
        queue.sync {
            try? handle.synchronize()
            try? handle.close()
            return bytes
        }
    }
}

/// The files of the recording in progress: the full mix, and each participant's own track in
/// a folder named after the mix file (`<recordingId>/<callId>.opus`), created on its first page.
struct RecordingFiles {
    let mix: RecordingFile
    let tracksDirectory: String
    var tracks: [CallID: RecordingFile] = [:]
    /// Tracks already closed (their participant left): the bytes each file holds.
    var closedTracks: [CallID: Int] = [:]
    /// A track file that could not be created or written.
    var trackFailure: String?

    /// Why a file of the recording failed, if one has.
    var failed: String? { mix.failed ?? trackFailure ?? tracks.values.lazy.compactMap(\.failed).first }

    mutating func write(_ writes: [RecordingTrackWrite]) {
        for write in writes {
            guard let file = file(for: write.callId) else { continue }
            file.append([write.bytes])
            if write.closes {
                closedTracks[write.callId] = file.close()
                tracks[write.callId] = nil
            }
        }
    }

    private mutating func file(for callId: CallID) -> RecordingFile? {
        if let open = tracks[callId] { return open }
        guard trackFailure == nil else { return nil }
        do {
            let file = try RecordingFile(path: "\(tracksDirectory)/\(callId.rawValue).opus")
            tracks[callId] = file
            return file
        } catch {
            trackFailure = "\(error)"
            return nil
        }
    }

    /// Closes every file: the mix's bytes and each track's.
    mutating func close() -> (mix: Int, tracks: [CallID: Int]) {
        for (id, file) in tracks { closedTracks[id] = file.close() }
        tracks = [:]
        return (mix.close(), closedTracks)
    }
}

/// A recording the room stopped: what the core summed up, the files' sizes, and why writing
/// failed if it did.
public struct StoppedRecording: Sendable {
    public let summary: RecordingSummary
    public let bytes: Int
    public let trackBytes: [CallID: Int]
    public let tracksDirectory: String
    public let failure: String?
}

extension Room {
    /// Starts recording the room's full mix into `path` (Ogg Opus), and with `perParticipant`
    /// each participant's own audio into the folder `path` names without its extension.
    public func startRecording(id: String, path: String, perParticipant: Bool = false) throws {
        if let active = core.recordingId { throw RecordingError.alreadyRecording(id: active) }
        let file = try RecordingFile(path: path)
        do {
            try core.startRecording(id: id, perParticipant: perParticipant, now: clock.now(), into: &output)
        } catch {
            _ = file.close()
            try? FileManager.default.removeItem(atPath: path)
            throw error
        }
        recordingFiles = RecordingFiles(mix: file, tracksDirectory: (path as NSString).deletingPathExtension)
        carryOut()
        startTicksIfNeeded()
    }

    /// Stops the recording in progress: its last pages are written, the files synced and
    /// closed. Nil when none runs.
    public func stopRecording() -> StoppedRecording? {
        guard let summary = core.stopRecording(now: clock.now(), into: &output) else { return nil }
        carryOut()
        guard var files = recordingFiles else { return nil }
        let bytes = files.close()
        recordingFiles = nil
        return StoppedRecording(summary: summary, bytes: bytes.mix, trackBytes: bytes.tracks,
                                tracksDirectory: files.tracksDirectory, failure: files.failed)
    }

    /// The recording's ID while one runs.
    public var activeRecordingId: String? { core.recordingId }

    /// Hands the step's recording bytes to the files; a file that failed stops the recording
    /// and the room tells it (`recording.failed`), and goes on.
    func writeRecording() {
        // Pages come once a second: only then is there anything to write or a failure to see.
        guard recordingFiles != nil, !output.recordingWrites.isEmpty || !output.trackWrites.isEmpty else { return }
        // In place through the optional: a copy would copy the open-files table on each write.
        if !output.recordingWrites.isEmpty { recordingFiles?.mix.append(output.recordingWrites) }
        recordingFiles?.write(output.trackWrites)
        guard let failure = recordingFiles?.failed, let id = core.recordingId else { return }
        _ = core.stopRecording(now: clock.now(), into: &output)
        _ = recordingFiles?.close()
        recordingFiles = nil
        logger.error("recording failed", metadata: ["recordingId": "\(id)", "error": "\(failure)"])
        publish(TimedRoomEvent(event: .recordingFailed(recordingId: id, error: failure), at: clock.now()))
    }
}

extension Room {
    /// Starts an RTP forward of the room's full mix (`RoomTaps`).
    public func addForwarder(_ request: ForwarderRequest) throws {
        try core.addForwarder(request)
        startTicksIfNeeded()
    }

    @discardableResult
    public func removeForwarder(id: String) -> Bool { core.removeForwarder(id: id) }

    public var forwarders: [ForwarderSnapshot] { core.forwarderSnapshots }
}
