import ChorusCore
import Foundation

/// A call of this room that ended on another node: the node ran the room before this one and
/// was lost (issue 17). Its end is in the store; the room says so on its event stream.
public struct DepartedCall: Sendable, Equatable {
    public var callId: String
    public var userId: String
    public var established: Bool
    public var endedAt: Date
    /// The node the call ran on.
    public var nodeId: String?

    public init(callId: String, userId: String, established: Bool, endedAt: Date, nodeId: String?) {
        self.callId = callId
        self.userId = userId
        self.established = established
        self.endedAt = endedAt
        self.nodeId = nodeId
    }
}

extension Room {
    /// Puts a `participant.ended` event (`endCause` `nodeLost`, with the lost node's ID) on the
    /// event stream for each call, in the order of their ends: an application that listens to
    /// the room (its stream broke with the node; it reconnects and is sent here) learns who left
    /// with that node, as it would have from the node itself. The events go to the log and the
    /// subscribers only: the call records were written by whoever ended the calls.
    public func announce(departures: [DepartedCall]) {
        for call in departures.sorted(by: { ($0.endedAt, $0.callId) < ($1.endedAt, $1.callId) }) {
            var end = CallEnd(member: EventMember(callId: CallID(guid: call.callId), userId: try? UserID(validating: call.userId)),
                              cause: .nodeLost, established: call.established)
            end.nodeId = call.nodeId
            _ = log.append(.participantEnded(end), at: call.endedAt)
        }
        if !departures.isEmpty {
            logger.info("calls lost with their node announced", metadata: ["calls": "\(departures.count)"])
        }
    }
}
