import AudioMixer
import ChorusCore
import VideoForwarder

/// What a member brings to a room and what it needs from it: the contract every kind of member
/// joins with. A WebRTC peer's is read from its SDP offer (`MemberMedia(webRTC:plan:)`), a
/// phone's will be read from its SIP offer, a link to another node's part of the room from that
/// part. The room's stages see only this and the member's `MemberConnection`, never the kind.
///
/// - Audio in: the format it sends (codec, clock rate, payload type), its SSRC when known, and
///   whether it sends RFC 6464 levels; packets at any clock rate are put on the mixer's 48 kHz
///   timeline, and a member handing in decoded frames sends them as L16.
/// - Audio out: the format its mix is sent in, on which SSRC, with RFC 6465 levels or not.
/// - Video in: its camera (one stream, or simulcast layers told apart by RID).
/// - Video out: its video slots, each an outgoing stream (with RTX when it takes RTX).
/// - Feedback both ways goes through its connection (RTCP), whatever the kind.
public struct MemberMedia: Sendable {
    public var audioIn: AudioIn?
    public var audioOut: AudioOut?
    /// Whether the member is expected to send audio (not receive-only): a silence is then worth
    /// a `noAudioReceived` warning.
    public var sendsAudio: Bool
    public var camera: Camera?
    public var slots: [Slot]

    public init(audioIn: AudioIn?, audioOut: AudioOut?, sendsAudio: Bool, camera: Camera? = nil, slots: [Slot] = []) {
        self.audioIn = audioIn
        self.audioOut = audioOut
        self.sendsAudio = sendsAudio
        self.camera = camera
        self.slots = slots
    }

    /// A member with a camera or video slots: the video stage knows it.
    public var hasVideo: Bool { camera != nil || !slots.isEmpty }

    /// The audio a member sends.
    public struct AudioIn: Sendable {
        public var format: AudioFormat
        /// Its SSRC, its CSRC in the mixes it is heard in; nil: learnt from its first packet.
        public var ssrc: SSRC?
        /// The RFC 6464 ssrc-audio-level extension's ID, when it sends its levels.
        public var levelExtensionID: UInt16?

        public init(format: AudioFormat, ssrc: SSRC?, levelExtensionID: UInt16? = nil) {
            self.format = format
            self.ssrc = ssrc
            self.levelExtensionID = levelExtensionID
        }
    }

    /// The mix a member hears.
    public struct AudioOut: Sendable {
        public var format: AudioFormat
        public var ssrc: SSRC
        /// The RFC 6465 csrc-audio-level extension's ID (1…14), when it takes the levels.
        public var csrcLevelExtensionID: UInt8?

        public init(format: AudioFormat, ssrc: SSRC, csrcLevelExtensionID: UInt8? = nil) {
            self.format = format
            self.ssrc = ssrc
            self.csrcLevelExtensionID = csrcLevelExtensionID
        }
    }

    /// A member's camera as the video stage forwards it.
    public struct Camera: Sendable {
        public var codec: VideoCodec
        public var payloadType: UInt8
        public var rtxPayloadType: UInt8?
        public var clockRate: UInt32
        /// One stream: its SSRC and RTX SSRC when announced (else learnt from the first packet).
        public var ssrc: SSRC?
        public var rtxSSRC: SSRC?
        /// Simulcast: the layers' RIDs in layer order, and the header extensions that name them.
        public var simulcastRIDs: [String]
        public var rtpStreamIDExtension: UInt8?
        public var repairedRTPStreamIDExtension: UInt8?

        public init(codec: VideoCodec, payloadType: UInt8, rtxPayloadType: UInt8?, clockRate: UInt32, ssrc: SSRC?,
                    rtxSSRC: SSRC?, simulcastRIDs: [String] = [], rtpStreamIDExtension: UInt8? = nil,
                    repairedRTPStreamIDExtension: UInt8? = nil) {
            self.codec = codec
            self.payloadType = payloadType
            self.rtxPayloadType = rtxPayloadType
            self.clockRate = clockRate
            self.ssrc = ssrc
            self.rtxSSRC = rtxSSRC
            self.simulcastRIDs = simulcastRIDs
            self.rtpStreamIDExtension = rtpStreamIDExtension
            self.repairedRTPStreamIDExtension = repairedRTPStreamIDExtension
        }

        public var isSimulcast: Bool { !simulcastRIDs.isEmpty }
    }

    /// One of a member's video slots: the stream the room sends other members' cameras on.
    public struct Slot: Sendable {
        public var mid: String
        public var codec: VideoCodec
        public var payloadType: PayloadType
        public var ssrc: SSRC
        public var rtx: (ssrc: SSRC, payloadType: PayloadType)?

        public init(mid: String, codec: VideoCodec, payloadType: PayloadType, ssrc: SSRC,
                    rtx: (ssrc: SSRC, payloadType: PayloadType)?) {
            self.mid = mid
            self.codec = codec
            self.payloadType = payloadType
            self.ssrc = ssrc
            self.rtx = rtx
        }
    }
}
