import ChorusCore

/// One simulcast stream of the camera as negotiated (RFC 8853 §2 "simulcast stream"; a layer to
/// the forwarder): the RID its packets carry in the RtpStreamId header extension (RFC 8852 §3.1)
/// and whether the offer starts it paused. Its position in `CameraSection.simulcastLayers` is
/// its layer index.
public struct SimulcastLayer: Sendable, Hashable {
    /// The `a=rid` identifier of the stream (RFC 8851 rid-id).
    public var rid: String
    /// Marked `~` in the offer's `a=simulcast` (RFC 8853 §5.1): the sender starts it paused and
    /// may resume it at any time without a new offer. Kept, and mirrored in the answer.
    public var paused: Bool

    public init(rid: String, paused: Bool = false) {
        self.rid = rid
        self.paused = paused
    }
}

/// Rid-based simulcast on the camera section (RFC 8853 `a=simulcast` with RFC 8851 `a=rid`):
/// which streams the offerer sends, in which order, and whether the offer is acceptable.
///
/// What browsers offer (captured here, `Tests/Fixtures/sdp/*simulcast*`): one `a=rid:<id> send`
/// line per `sendEncodings` entry and `a=simulcast:send <ids>`, both **in the order the page
/// listed its encodings** (webrtc-pc "add an a=rid send line … in the same order as given in
/// the encodings field"). Chromium 156 and Firefox ESR 153 both wrote `a=simulcast:send q;h;f`
/// for `sendEncodings: [{rid:'q', scaleResolutionDownBy:4}, {rid:'h', …2}, {rid:'f'}]`, so neither
/// reorders it, and the order says nothing about resolution: a page listing high first (the
/// webrtc-pc example, and Janus's convention, `h;m;l`) gives the opposite order. Firefox once
/// needed its encodings reversed (versatica/mediasoup-client#151/#152, Firefox 84, 2021); ESR
/// 153 does not. Firefox also announces each layer's SSRCs (`a=ssrc` with one `ssrc-group:FID`
/// per layer, without saying which RID each belongs to) and puts a direction on the RID
/// extmaps (`a=extmap:9/sendonly …rtp-stream-id`); Chromium announces no SSRC at all. Either
/// way the forwarder learns SSRC → layer from the RID header extensions of the packets.
///
/// Rules: the layers are the streams of `a=simulcast:send`, in its order (RFC 8853 §5.2: the
/// order of the `a=rid` lines carries no meaning); of a stream's alternatives (`,`) the first
/// is taken and the rest dropped from the answer (§5.3.2 lets the answerer remove them);
/// paused (`~`) streams are kept and marked. Refused: more than `maximumSimulcastLayers`
/// streams, a RID listed twice, a RID without an `a=rid:<id> send` line (§5.1), a `pt=`
/// restriction that leaves out the chosen codec. Declined (answered as one stream, which a
/// browser sends as its first encoding): an offer that does not let its packets carry the RID
/// header extension, since the layers could not then be told apart.
extension OfferAnalysis {
    /// The most simulcast streams a camera may send; browsers send three when asked.
    public static let maximumSimulcastLayers = 3

    /// The camera's layers in `a=simulcast:send` order, or none when the section offers no
    /// simulcast (or offers it without the RID header extension). Throws for a malformed offer.
    static func negotiateSimulcast(_ section: MediaDescription, video: VideoSection)
        throws(SDPOfferError) -> [SimulcastLayer]
    {
        guard let simulcast = section.simulcast, !simulcast.send.isEmpty else { return [] }
        let mid = video.mid
        guard simulcast.send.count <= maximumSimulcastLayers else {
            throw .tooManySimulcastStreams(mid: mid, offered: simulcast.send.count, allowed: maximumSimulcastLayers)
        }
        let defined = sendRIDs(section)
        var named = Set<String>()
        for stream in simulcast.send {
            for alternative in stream {
                guard named.insert(alternative.rid).inserted else {
                    throw .duplicateSimulcastRID(mid: mid, rid: alternative.rid)
                }
                guard defined[alternative.rid] != nil else { throw .unknownSimulcastRID(mid: mid, rid: alternative.rid) }
            }
        }
        var layers: [SimulcastLayer] = []
        for stream in simulcast.send {
            // The parser never yields an empty stream; an empty one would simply be skipped.
            guard let first = stream.first, let rid = defined[first.rid] else { continue }
            if let allowed = rid.payloadTypes, !allowed.contains(video.codec.payloadType) {
                throw .ridExcludesCodec(mid: mid, rid: rid.id, payloadType: video.codec.payloadType)
            }
            layers.append(SimulcastLayer(rid: first.rid, paused: first.paused))
        }
        return sendsRTPStreamID(section) ? layers : []
    }

    /// The first `a=rid:<id> send` line of each RID.
    private static func sendRIDs(_ section: MediaDescription) -> [String: RID] {
        var rids: [String: RID] = [:]
        for rid in section.rids where rid.direction == .send && rids[rid.id] == nil {
            rids[rid.id] = rid
        }
        return rids
    }

    /// Whether the offerer's packets may carry the RtpStreamId extension: it is mapped with an
    /// ID the answer can echo, and not only for the offerer's receive direction.
    private static func sendsRTPStreamID(_ section: MediaDescription) -> Bool {
        let offered = HeaderExtensions(offered: section.extensionMaps, supported: [ExtensionMap.URI.rtpStreamID])
        guard let map = offered.maps.first else { return false }
        return map.direction?.sends ?? true
    }
}
