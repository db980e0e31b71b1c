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

extension Room {
    /// Starts recording the room's full mix into `path` (Ogg Opus).
    public func startRecording(id: String, path: String) throws {
        if let active = core.recordingId { throw RecordingError.alreadyRecording(id: active) }
        let file = try RecordingFile(path: path)
        do {
            try core.startRecording(id: id, now: clock.now(), into: &output)
        } catch {
            _ = file.close()
            try? FileManager.default.removeItem(atPath: path)
            throw error
        }
        recordingFile = file
        carryOut()
    }

    /// Stops the recording in progress: its last page is written, the file synced and closed.
    /// Nil when none runs.
    public func stopRecording() -> (summary: RecordingSummary, bytes: Int, failure: String?)? {
        guard let summary = core.stopRecording(now: clock.now(), into: &output) else { return nil }
        carryOut()
        let bytes = recordingFile?.close() ?? 0
        let failure = recordingFile?.failed
        recordingFile = nil
        return (summary, bytes, failure)
    }

    /// The recording's ID while one runs.
    public var activeRecordingId: String? { core.recordingId }

    /// Hands the step's recording bytes to the file; a file that failed stops the recording
    /// and the room tells it (`recording.failed`), and goes on.
    func writeRecording() {
        // Pages come once a second: only then is there anything to write or a failure to see.
        guard let file = recordingFile, !output.recordingWrites.isEmpty else { return }
        file.append(output.recordingWrites)
        guard let failure = file.failed, let id = core.recordingId else { return }
        _ = core.stopRecording(now: clock.now(), into: &output)
        _ = file.close()
        recordingFile = nil
        logger.error("recording failed", metadata: ["recordingId": "\(id)", "error": "\(failure)"])
        publish(RoomCoreEvent(name: RoomEventName.recordingFailed.rawValue, fields: ["recordingId": .string(id), "error": .string(failure)],
                              at: clock.now()))
    }
}

extension Room {
    /// Starts an RTP forward of the room's full mix (`RoomCore+Forwarding`).
    public func addForwarder(_ request: ForwarderRequest) throws {
        try core.addForwarder(request)
        startTimerIfNeeded()
    }

    @discardableResult
    public func removeForwarder(id: String) -> Bool { core.removeForwarder(id: id) }

    public var forwarders: [ForwarderSnapshot] { core.forwarderSnapshots }
}
