import ChorusCore
import Foundation

/// One member as the room's member table keeps it: who it is, where its call stands, its
/// connection and contract (the member seam), its place in the audio stage, and the addresses
/// the media port routes to it. Everything about its media lives in the stages.
///
/// A class confined to the room core (the room's queue): the per-datagram path reaches its
/// connection by one lookup, without copying the record.
final class Member {
    let callId: CallID
    let userId: UserID
    let displayName: String?
    let joinedAt: Date
    var establishedAt: Date?
    var state: ParticipantState = .progressing
    var audioMuted = false
    var videoPaused = false
    let connection: any MemberConnection
    let media: MemberMedia
    /// Its slot in the audio stage.
    let audio: AudioStage.Handle
    /// The payload type of its audio, read per packet (audio goes to the audio stage, the
    /// rest to the video router).
    let audioPayloadType: UInt8?
    /// Addresses bound to it in the media port's routing table (its checks, its nomination).
    var boundAddresses: Set<TransportAddress> = []
    /// How its media is protected, once connected (the SRTP profile, or "none").
    var security: String?

    init(callId: CallID, userId: UserID, displayName: String?, joinedAt: Date, connection: any MemberConnection,
         media: MemberMedia, audio: AudioStage.Handle) {
        self.callId = callId
        self.userId = userId
        self.displayName = displayName
        self.joinedAt = joinedAt
        self.connection = connection
        self.media = media
        self.audio = audio
        audioPayloadType = media.audioIn?.format.payloadType
    }

    var eventMember: EventMember { EventMember(callId: callId, userId: userId) }
}
