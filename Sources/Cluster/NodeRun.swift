import Foundation
import Storage

/// One start of a node: a fresh instance ID, and where the process runs ("host boot-id pid").
/// The heartbeat carries both, so the store can tell this run's row from a twin's (two
/// processes given one node ID), and a restart on the same machine can tell its own dead
/// predecessor (`kill -9`) at once instead of watching its heartbeat stop.
public struct NodeRun: Sendable, Equatable {
    public var instanceId: String
    public var processRef: String

    public init(instanceId: String, processRef: String) {
        self.instanceId = instanceId
        self.processRef = processRef
    }

    /// This process's run.
    public static func current() -> NodeRun {
        NodeRun(instanceId: UUID().uuidString.lowercased(),
                processRef: "\(hostName()) \(bootId()) \(getpid())")
    }

    /// True only when `processRef` names a process on this machine (same host name, same boot)
    /// that no longer exists. Anything else — another host, another boot, a live process, an
    /// unreadable reference — proves nothing, and the caller must watch the heartbeat instead.
    public func provesGone(_ other: String?) -> Bool {
        let mine = processRef.split(separator: " ")
        guard let theirs = other?.split(separator: " "), theirs.count == 3, mine.count == 3,
              theirs[0] == mine[0], theirs[1] == mine[1], theirs[1] != "unknown",
              let pid = Int32(theirs[2]), pid > 0, String(pid) != mine[2]
        else { return false }
        return kill(pid, 0) == -1 && errno == ESRCH
    }

    private static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "unknown" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // Spaces separate the reference's fields.
        return name.isEmpty ? "unknown" : name.replacingOccurrences(of: " ", with: "-")
    }

    private static func bootId() -> String {
        let text = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)) ?? ""
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.isEmpty || trimmed.contains(" ") ? "unknown" : trimmed
    }
}

/// A node ID already held by a live run elsewhere: this process must not start under it.
public struct NodeIdInUse: Error, CustomStringConvertible {
    public let holder: NodeRecord
    public let heartbeatAge: TimeInterval

    public var description: String {
        let age = String(format: "%.1f", max(0, heartbeatAge))
        let media = holder.mediaAddresses.isEmpty ? "" : ", media \(holder.mediaAddresses)"
        return "node ID \"\(holder.nodeId)\" is held by a live node at \(holder.advertiseUrl)\(media) "
            + "(last heartbeat \(age) s ago). Give this node its own --node-id (CHORUS_NODE_ID), or stop that node first."
    }
}
