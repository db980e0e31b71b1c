import ChorusCore

/// Why an SDP offer was refused. Thrown by `SessionDescription(parsing:)` (`tooLarge`,
/// `malformed`) and by `OfferAnalysis(offer:videoSlots:)` (the shape rules, and the simulcast
/// rules of the camera section).
///
/// `code` is the stable machine-readable name the REST API returns; `message` is a sentence
/// for people. Codes never change once published; messages may.
public enum SDPOfferError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The text is longer than the parser's limit.
    case tooLarge(bytes: Int, limit: Int)
    /// Line `line` (1-based) breaks the SDP grammar.
    case malformed(line: Int, reason: String)
    /// No audio m= line in use.
    case noAudio
    /// More than one audio m= line in use; a participant sends one microphone.
    case multipleAudio(count: Int)
    /// The audio m= line does not offer opus/48000/2.
    case noOpus
    /// More than one video m= line on which the client sends (sendrecv or sendonly).
    case multipleVideoSenders(count: Int)
    /// More video m= lines receive (recvonly or sendrecv) than the room has video slots.
    case tooManyVideoSlots(offered: Int, allowed: Int)
    /// A video m= line offers neither VP8 nor H.264 with packetization-mode=1.
    case noVideoCodec(mid: String)
    /// An audio or video m= line does not use `UDP/TLS/RTP/SAVPF` (DTLS-SRTP with feedback).
    case unsupportedProtocol(mid: String, proto: String)
    /// An m= line in use has no `a=mid`, so it cannot be bundled.
    case noMid(mLineIndex: Int)
    /// Two m= lines share one `a=mid`.
    case duplicateMid(String)
    /// No `a=group:BUNDLE` covers every m= line the server accepts, or it names unknown mids.
    case noBundle(detail: String)
    /// An accepted m= line lacks `a=rtcp-mux`.
    case noRtcpMux(mid: String)
    /// No `a=ice-ufrag` / `a=ice-pwd` for the bundled transport.
    case noIceCredentials
    /// The ICE ufrag or password breaks RFC 8839 §5.4 (characters, or 4/22…256 characters).
    case invalidIceCredentials
    /// No `a=fingerprint` for the bundled transport.
    case noFingerprint
    /// Fingerprints are present, but none uses a hash function the DTLS layer supports.
    case unsupportedFingerprint(hashFunctions: [String])
    /// `a=setup:holdconn`: no DTLS role the server could take.
    case unsupportedSetup(Setup)
    /// The camera's `a=simulcast:send` lists more simulcast streams than Chorus receives.
    case tooManySimulcastStreams(mid: String, offered: Int, allowed: Int)
    /// The camera's `a=simulcast:send` names a RID that no `a=rid:<id> send` line of the
    /// section defines (RFC 8853 §5.1).
    case unknownSimulcastRID(mid: String, rid: String)
    /// The camera's `a=simulcast` names one RID more than once (RFC 8853 §5.1).
    case duplicateSimulcastRID(mid: String, rid: String)
    /// An `a=rid` of a simulcast stream restricts it (`pt=`, RFC 8851 §5) to payload types
    /// that leave out the codec the answer chose for the section.
    case ridExcludesCodec(mid: String, rid: String, payloadType: PayloadType)

    /// Stable machine-readable name, e.g. `noOpus`.
    public var code: String {
        switch self {
        case .tooLarge: return "tooLarge"
        case .malformed: return "malformed"
        case .noAudio: return "noAudio"
        case .multipleAudio: return "multipleAudio"
        case .noOpus: return "noOpus"
        case .multipleVideoSenders: return "multipleVideoSenders"
        case .tooManyVideoSlots: return "tooManyVideoSlots"
        case .noVideoCodec: return "noVideoCodec"
        case .unsupportedProtocol: return "unsupportedProtocol"
        case .noMid: return "noMid"
        case .duplicateMid: return "duplicateMid"
        case .noBundle: return "noBundle"
        case .noRtcpMux: return "noRtcpMux"
        case .noIceCredentials: return "noIceCredentials"
        case .invalidIceCredentials: return "invalidIceCredentials"
        case .noFingerprint: return "noFingerprint"
        case .unsupportedFingerprint: return "unsupportedFingerprint"
        case .unsupportedSetup: return "unsupportedSetup"
        case .tooManySimulcastStreams: return "tooManySimulcastStreams"
        case .unknownSimulcastRID: return "unknownSimulcastRID"
        case .duplicateSimulcastRID: return "duplicateSimulcastRID"
        case .ridExcludesCodec: return "ridExcludesCodec"
        }
    }

    /// A sentence saying what is wrong, for logs and the API's error body.
    public var message: String {
        switch self {
        case .tooLarge(let bytes, let limit):
            return "the SDP offer is \(bytes) bytes; at most \(limit) are accepted"
        case .malformed(let line, let reason): return "SDP line \(line) is malformed: \(reason)"
        case .noAudio: return "the offer has no audio m-line; exactly one is required"
        case .multipleAudio(let count): return "the offer has \(count) audio m-lines; exactly one is allowed"
        case .noOpus: return "the audio m-line does not offer opus/48000/2"
        case .multipleVideoSenders(let count):
            return "the offer sends video on \(count) m-lines; at most one camera is allowed"
        case .tooManyVideoSlots(let offered, let allowed):
            return "the offer receives video on \(offered) m-lines; this room has \(allowed) video slots"
        case .noVideoCodec(let mid):
            return "video m-line \(mid) offers neither VP8 nor H264 with packetization-mode=1"
        case .unsupportedProtocol(let mid, let proto):
            return "m-line \(mid) uses \(proto); only UDP/TLS/RTP/SAVPF is supported"
        case .noMid(let index): return "m-line \(index) has no a=mid"
        case .duplicateMid(let mid): return "a=mid:\(mid) appears on more than one m-line"
        case .noBundle(let detail): return "BUNDLE is required: \(detail)"
        case .noRtcpMux(let mid): return "m-line \(mid) lacks a=rtcp-mux, which is required"
        case .noIceCredentials: return "the offer has no a=ice-ufrag and a=ice-pwd"
        case .invalidIceCredentials:
            return "a=ice-ufrag must be 4-256 and a=ice-pwd 22-256 characters of A-Z a-z 0-9 + /"
        case .noFingerprint: return "the offer has no a=fingerprint"
        case .unsupportedFingerprint(let functions):
            return "no a=fingerprint uses sha-1/224/256/384/512 (offered: \(functions.joined(separator: ", ")))"
        case .unsupportedSetup(let setup): return "a=setup:\(setup.rawValue) leaves no DTLS role for the server"
        case .tooManySimulcastStreams(let mid, let offered, let allowed):
            return "a=simulcast on video m-line \(mid) sends \(offered) streams; at most \(allowed) are received"
        case .unknownSimulcastRID(let mid, let rid):
            return "a=simulcast on video m-line \(mid) names RID \(rid), which has no a=rid:\(rid) send line"
        case .duplicateSimulcastRID(let mid, let rid):
            return "a=simulcast on video m-line \(mid) names RID \(rid) more than once"
        case .ridExcludesCodec(let mid, let rid, let payloadType):
            return "a=rid:\(rid) on video m-line \(mid) restricts its payload types (pt=) to a list without "
                + "\(payloadType.rawValue), the codec the answer chose"
        }
    }

    public var description: String { "\(code): \(message)" }
}
