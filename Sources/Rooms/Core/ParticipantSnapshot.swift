import ChorusCore
import PeerTransport
import Foundation

/// Where a participant is in its call (the SDK's call delegate states).
public enum ParticipantState: String, Sendable, Codable {
    /// Joined with an offer; ICE and DTLS not finished yet.
    case progressing
    /// ICE nominated and DTLS done: media can flow both ways.
    case established
    case ended
}

/// Why a call ended, as the SDK reports it.
public enum EndCause: String, Sendable, Codable, CaseIterable {
    case hungUp, kicked, timeout, roomClosed, failed, serverShutdown
    /// The node serving the room was lost (or lost its lease on the room to another node).
    case nodeLost
}

/// Media counters of one participant's connection (the transport's own), reported by the API and
/// stored in the call record at call end.
public typealias MediaCounters = TransportCounters

/// A read-only view of a participant, for the API.
public struct ParticipantSnapshot: Sendable, Equatable {
    public let callId: CallID
    public let userId: UserID
    public let displayName: String?
    public let state: ParticipantState
    public let endCause: EndCause?
    public let joinedAt: Date
    public let establishedAt: Date?
    public let audioMuted: Bool
    public let videoPaused: Bool
    public let counters: MediaCounters
    /// What the server measured on the participant's audio so far (the call record's `audio`).
    public let audioStatistics: [String: Int]
    /// Video counters: packets received and forwarded, keyframe requests, NACKs, switches.
    public let videoStatistics: [String: Int]
    /// Publishers this participant pinned to its first video slots.
    public let pinned: [CallID]
    /// The SRTP profile negotiated by DTLS, once established.
    public let srtpProfile: String?
    /// What the server knows of the path toward the participant, nil before it knows anything.
    public let downlink: DownlinkEstimate?
    /// Its video slots: who each shows, which layer, and whether it is paused for bandwidth.
    public let slots: [SlotView]
    /// The layers its camera sends (one without simulcast), as they arrive.
    public let publishedLayers: [PublishedLayerView]
}

/// One stream of a participant's camera as the API shows it: its RID (simulcast), the bit/s
/// arriving over the last second, and the height of its last VP8 keyframe.
public struct PublishedLayerView: Sendable, Equatable, Encodable {
    public var rid: String?
    public var bitrate: Int
    public var height: Int?
    /// VP8 with temporal layers: the bit/s with TID ≤ 0, ≤ 1, … (what a slot forwarding up to
    /// that layer sends); absent without temporal layers.
    public var temporalBitrates: [Int]?
}

/// One of a participant's video slots as the API shows it (the `video.slots` event's entry).
public struct SlotView: Sendable, Equatable, Encodable {
    public var mid: String
    public var publisherCallId: String?
    /// The publisher's layer the slot shows or moves to (its `a=simulcast` position; 0 without).
    public var layer: Int?
    public var rid: String?
    /// The highest VP8 temporal layer (TID) forwarded of that layer, when not all of them are.
    public var temporalLayer: Int?
    /// `bandwidth` while the subscriber's downlink cannot carry even the lowest layer.
    public var paused: String?
    /// The tallest picture the subscriber asked for in this slot, if it asked.
    public var maxHeight: Int?
}

/// The tallest picture a subscriber wants in one of its slots (`PATCH {"slots": [...]}`): the
/// slot's mid, and the height in pixels (nil lifts the cap).
public struct SlotHeight: Sendable, Equatable {
    public var mid: String
    public var maximumHeight: Int?

    public init(mid: String, maximumHeight: Int?) {
        self.mid = mid
        self.maximumHeight = maximumHeight
    }
}

/// A participant's downlink estimate over its call, from one sample a second: what the call
/// record keeps (the participant GET shows the current estimate).
public struct EstimateSummary: Sendable, Equatable {
    public private(set) var samples = 0
    public private(set) var minimum = Int.max
    public private(set) var maximum = 0
    private var sum = 0.0

    public init() {}

    public mutating func add(_ bitrate: Int) {
        samples += 1
        minimum = min(minimum, bitrate)
        maximum = max(maximum, bitrate)
        sum += Double(bitrate)
    }

    /// nil before the first sample.
    public var mean: Int? { samples == 0 ? nil : Int(sum / Double(samples)) }
}

/// The bandwidth of the path from the server to a participant: the server's own send-side
/// estimate from the participant's transport-cc feedback, or, for a client without
/// transport-cc, the last REMB it sent. What the participant's video layers are chosen by.
public struct DownlinkEstimate: Sendable, Equatable, Encodable {
    /// bit/s the server may send the participant.
    public var bitrate: Int
    /// `transportCC` (the server's estimator) or `remb` (the client's own estimate).
    public var source: String
    /// The estimator's parts, with transport-cc: the delay-based and loss-based estimates, the
    /// bitrate the client acknowledged lately, and the loss fraction it reported (0…1).
    public var delayBasedBitrate: Int?
    public var lossBasedBitrate: Int?
    public var acknowledgedBitrate: Int?
    public var lossFraction: Double?
    /// The round-trip time from the participant's receiver reports (RFC 3550 §6.4.1), ms.
    public var roundTripTimeMilliseconds: Int?
}

/// What a join asks of a room.
public struct JoinRequest: Sendable {
    public let callId: CallID
    public let userId: UserID
    public let displayName: String?
    public let offer: String
    /// The caller's custom headers (at most 1,024 bytes, checked by the API), told to the
    /// room's listeners in `participant.joined`.
    public let headers: [String: String]

    public init(callId: CallID, userId: UserID, displayName: String?, offer: String, headers: [String: String] = [:]) {
        self.callId = callId
        self.userId = userId
        self.displayName = displayName
        self.offer = offer
        self.headers = headers
    }
}

/// Why a join was refused; the API maps each to a status and code.
public enum JoinError: Error, Equatable, Sendable {
    /// The offer does not have the shape Chorus accepts (422, with the rule's code).
    case offerRejected(code: String, message: String)
    case roomFull
    case roomClosed
    case duplicateCall
    case internalFailure(String)
}
