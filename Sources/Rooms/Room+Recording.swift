import ChorusCore
import Dispatch
import Foundation

/// The file a room's recording goes to: bytes appended in order on a serial queue of its own, so
/// the room's queue never waits on the disk. Each page is written as it comes (one a second), so
/// a `kill -9` leaves a file that plays up to its last page. A write that fails (a full disk)
/// marks the file failed; the room then stops the recording and says so.
/// `@unchecked Sendable`: `handle` and `failure` are touched only on `queue`, except `failure`'s
/// read by `failed`, which goes through `queue.sync`.
final class RecordingFile: @unchecked Sendable {
    let path: String
    private let queue = DispatchQueue(label: "chorus.recording")
    private let handle: FileHandle
    private var failure: String?
    private(set) var bytes = 0

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
            guard self.failure == nil else { return }
            for chunk in chunks {
                do {
                    try self.handle.write(contentsOf: chunk)
                    self.bytes += chunk.count
                } catch {
                    self.failure = "\(error)"
                    return
                }
            }
        }
    }

    /// Why writing failed, if it did (waits for the writes queued so far).
    var failed: String? { queue.sync { failure } }

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
        let failure = recordingFile?.failed
        let bytes = recordingFile?.close() ?? 0
        recordingFile = nil
        return (summary, bytes, failure)
    }

    /// The recording's ID while one runs.
    public var activeRecordingId: String? { core.recordingId }

    /// Hands the step's recording bytes to the file; a file that failed stops the recording
    /// and the room tells it (`recording.failed`), and goes on.
    func writeRecording() {
        guard let file = recordingFile else { return }
        if !output.recordingWrites.isEmpty { file.append(output.recordingWrites) }
        guard core.audioTicksDue % 50 == 0, let failure = file.failed, let id = core.recordingId else { return }
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
