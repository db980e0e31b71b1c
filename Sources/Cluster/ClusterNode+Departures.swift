import ChorusCore
import Foundation
import Rooms
import Storage

/// The calls a lost node took with it (issue 17, item 5). A node's events live in the rooms it
/// runs, so a lost node's listeners lose their stream with it; they reconnect, are sent to the
/// room's next node, and that node, when it opens the room, tells `participant.ended`
/// (`nodeLost`) for each call its previous run left behind (the API hands these to
/// `Room.announce(departures:)`).
extension ClusterNode {
    /// How long after its recorded end a call lost with its node is still told of when its
    /// room opens again: long enough for listeners and participants to come back (the web
    /// client rejoins within seconds), short enough that a room opened again much later does
    /// not replay old news.
    static let departureNoticeSeconds: TimeInterval = 120
    /// How far back a room's calls are looked at (by join time).
    static let departureLookbackSeconds: TimeInterval = 86_400

    /// Run when the room of `record` opened here: each of its calls that ran on a node which is
    /// no longer live and is still open in the store is ended `nodeLost` at that node's last
    /// heartbeat (the sweeper may not have got to it yet, and the node lost the room's lease,
    /// so it cannot be running the call); those and the calls already ended `nodeLost` within
    /// `departureNoticeSeconds` are returned, to be announced. Not isolated: it only reads and
    /// writes the store, and a heartbeat need not wait for it.
    public nonisolated func departures(of record: RoomRecord) async throws(StorageError) -> [DepartedCall] {
        let now = clock()
        var departures: [DepartedCall] = []
        var liveness: [String: (live: Bool, heartbeat: Date)]?
        var token: PageToken?
        repeat {
            let filter = CallFilter(applicationId: record.applicationId, roomId: record.roomId,
                                    from: now.addingTimeInterval(-Self.departureLookbackSeconds))
            let page = try await store.calls(filter, after: token, limit: 500)
            for call in page.items {
                if call.endedAt == nil, let nodeId = call.nodeId, nodeId != identity.nodeId {
                    if liveness == nil { liveness = try await nodeLiveness(now: now) }
                    // A live node's calls are its own to end (its recorder may be behind).
                    guard let node = liveness?[nodeId], !node.live else { continue }
                    let endedAt = max(min(node.heartbeat, now), call.joinedAt)
                    try await store.modifyCall(callId: call.callId) { stored in
                        guard stored.endedAt == nil else { return }
                        stored.state = "ended"
                        stored.endCause = EndCause.nodeLost.rawValue
                        stored.endedAt = endedAt
                    }
                    departures.append(Self.departure(call, endedAt: endedAt))
                } else if call.endCause == EndCause.nodeLost.rawValue, let endedAt = call.endedAt,
                          now.timeIntervalSince(endedAt) < Self.departureNoticeSeconds {
                    departures.append(Self.departure(call, endedAt: endedAt))
                }
            }
            token = page.nextPageToken
        } while token != nil
        return departures
    }

    /// Each node's liveness (up or draining, heartbeat within the loss limit) and last heartbeat.
    private nonisolated func nodeLiveness(now: Date) async throws(StorageError) -> [String: (live: Bool, heartbeat: Date)] {
        let liveAfter = now.addingTimeInterval(-timing.lossAfter)
        var result: [String: (live: Bool, heartbeat: Date)] = [:]
        for node in try await store.nodes() {
            result[node.nodeId] = (["up", "draining"].contains(node.state) && node.heartbeatAt > liveAfter, node.heartbeatAt)
        }
        return result
    }

    private static func departure(_ call: CallRecord, endedAt: Date) -> DepartedCall {
        DepartedCall(callId: call.callId, userId: call.userId, established: call.establishedAt != nil,
                     endedAt: endedAt, nodeId: call.nodeId)
    }
}
