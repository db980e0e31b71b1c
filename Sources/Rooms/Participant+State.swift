import ChorusCore
import Foundation
import PeerTransport

/// A participant as the room keeps it: identity, call state, and its transport.
struct Participant {
    let callId: CallID
    let userId: UserID
    let displayName: String?
    let joinedAt: Date
    var establishedAt: Date?
    var state: ParticipantState = .progressing
    var audioMuted = false
    var videoPaused = false
    let transport: PeerTransport
    let connection: ParticipantConnection
    let ufrag: String
    var boundAddresses: Set<TransportAddress> = []
    var srtpProfile: String?
    var audio: ParticipantAudio
    var video: ParticipantVideo

    func snapshot(endCause: EndCause? = nil) -> ParticipantSnapshot {
        ParticipantSnapshot(
            callId: callId, userId: userId, displayName: displayName, state: state, endCause: endCause,
            joinedAt: joinedAt, establishedAt: establishedAt, audioMuted: audioMuted, videoPaused: videoPaused,
            counters: transport.counters, audioStatistics: audio.statistics, videoStatistics: video.statistics.fields,
            pinned: video.pinned, srtpProfile: srtpProfile)
    }
}

extension MediaCounters {
    /// The counters as event fields (the call record stores them as server statistics).
    var fields: [String: EventField] {
        [
            "packetsReceived": .int(Int(clamping: packetsReceived)), "bytesReceived": .int(Int(clamping: bytesReceived)),
            "packetsSent": .int(Int(clamping: packetsSent)), "bytesSent": .int(Int(clamping: bytesSent)),
            "rtcpReceived": .int(Int(clamping: rtcpReceived)), "rtcpSent": .int(Int(clamping: rtcpSent)),
            "packetsDropped": .int(Int(clamping: packetsDropped)), "stunReceived": .int(Int(clamping: stunReceived)),
            "sendFailures": .int(Int(clamping: sendFailures)),
        ]
    }
}
