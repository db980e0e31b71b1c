import RTP

/// The video codecs the forwarder understands (what a slot and a camera negotiated).
public enum VideoCodec: Sendable, Hashable {
    case vp8
    case h264
}

/// Tells whether a video RTP payload starts a keyframe, per codec: the switch point of a slot
/// and the answer to a keyframe request.
///
/// VP8 (RFC 7741 §4.3): the first packet of a frame whose VP8 header has P = 0. H.264
/// (RFC 6184 §5.4–5.8): a packet carrying an IDR slice (NAL type 5) or the SPS (type 7) that
/// precedes it, directly, inside a STAP-A, or as the start of an FU-A. Never traps on peer
/// input: short or malformed payloads are simply not keyframes.
public enum KeyframeDetector {
    public static func isKeyframeStart(codec: VideoCodec, payload: ArraySlice<UInt8>, vp8: VP8PayloadDescriptor?) -> Bool {
        switch codec {
        case .vp8:
            return vp8?.isKeyFrame(payload: payload) ?? false
        case .h264:
            return isH264Keyframe(payload)
        }
    }

    static func isH264Keyframe(_ payload: ArraySlice<UInt8>) -> Bool {
        guard let first = payload.first else { return false }
        let type = first & 0x1F
        switch type {
        case 5, 7:
            return true
        case 24:  // STAP-A: 16-bit size, NAL unit, repeated
            var index = payload.startIndex + 1
            while index + 2 < payload.endIndex {
                let size = Int(payload.uint16(at: index - payload.startIndex))
                let nal = index + 2
                guard size > 0, nal + size <= payload.endIndex else { return false }
                if payload[nal] & 0x1F == 5 || payload[nal] & 0x1F == 7 { return true }
                index = nal + size
            }
            return false
        case 28:  // FU-A: start bit and the fragmented NAL's type
            guard payload.count >= 2 else { return false }
            let header = payload[payload.startIndex + 1]
            return header & 0x80 != 0 && (header & 0x1F == 5 || header & 0x1F == 7)
        default:
            return false
        }
    }
}
