import Foundation
import Storage

/// A node ID is held by one run at a time. A starting node reads its ID's row: free when there
/// is none, or its run is this one, or it is stopped, lost or silent beyond the loss limit;
/// free when its process is provably gone (a `kill -9` on this machine); otherwise the start
/// watches the row for 2.5 heartbeat intervals, and a heartbeat landing meanwhile means a live
/// twin holds the ID (`NodeIdInUse`). A holder that stays silent was this node's previous run.
extension ClusterNode {
    static let claimPoll: Duration = .milliseconds(250)

    /// How this run came to hold its node ID (`ClusterNode.claim`).
    public enum IdentityClaim: Sendable, Equatable {
        /// Nobody live held it.
        case free
        /// Its holder was this machine's process that no longer exists.
        case predecessorGone
        /// Its holder's heartbeat did not move while this run watched it.
        case predecessorSilent
    }

    func waitUntilTheIdIsFree() async throws -> IdentityClaim {
        guard let held = try await heldByAnotherLiveRun() else { return .free }
        if run.provesGone(held.processRef) {
            logger.info("node ID held by a run whose process is gone; taking it over",
                        metadata: ["node": "\(identity.nodeId)", "previous": "\(held.processRef ?? "")"])
            return .predecessorGone
        }
        let polls = max(1, Int((timing.heartbeatInterval * 2.5 / 0.25).rounded(.up)))
        logger.info("node ID held by a recent heartbeat; watching whether its node is alive", metadata: [
            "node": "\(identity.nodeId)", "holder": "\(held.advertiseUrl)", "seconds": "\(Double(polls) * 0.25)",
        ])
        for _ in 0..<polls {
            try await Task.sleep(for: Self.claimPoll)
            guard let now = try await heldByAnotherLiveRun() else { return .free }
            if now.instanceId != held.instanceId || now.heartbeatAt != held.heartbeatAt {
                throw NodeIdInUse(holder: now, heartbeatAge: clock().timeIntervalSince(now.heartbeatAt))
            }
        }
        logger.warning("the node ID's previous run stopped beating; taking it over",
                       metadata: ["node": "\(identity.nodeId)", "previous": "\(held.advertiseUrl)"])
        return .predecessorSilent
    }

    /// The row of this node ID when a live run other than this one wrote it.
    private func heldByAnotherLiveRun() async throws(StorageError) -> NodeRecord? {
        guard let row = try await store.nodes().first(where: { $0.nodeId == identity.nodeId }),
              row.instanceId != run.instanceId,
              row.isLive(after: clock().addingTimeInterval(-timing.lossAfter))
        else { return nil }
        return row
    }
}
