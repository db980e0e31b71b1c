import ChorusCore
import RTP

/// Which simulcast layer each SSRC of a publisher's camera carries, learned from the packets,
/// and how fast each layer arrives.
///
/// The offer names the layers by RID only (RFC 8851/8853): Chromium announces no SSRC, and
/// Firefox announces its SSRCs without saying which RID each belongs to. So the layer of an
/// SSRC comes from the RID header extensions (RFC 8852 §3): a media packet carries its layer's
/// RID in RtpStreamId, an RTX packet (RFC 4588) the RID of the layer it repairs in
/// RepairedRtpStreamId. libwebrtc stops writing them once an RTCP receiver report has
/// acknowledged the SSRC, so what a packet teaches is kept for good: later packets of a
/// learned SSRC need no extension.
///
/// Rules (each refusal is counted in `refusals`, and the packet should be dropped):
/// - A packet whose RID (or repaired RID) is not one of the negotiated layers: `unknownRID`.
/// - A packet of an SSRC not learned yet that carries no RID: `unlearnedSSRC` (its first
///   packets were lost, or it is no layer).
/// - At most one media and one RTX SSRC per layer, so at most `maximumLayers` × 2 entries: a
///   new SSRC naming a layer whose stream already has an SSRC is refused (`layerTaken`) while
///   that SSRC is alive, and replaces it once it has been silent for `replaceAfter` (a sender
///   that changed the SSRC after a collision, RFC 3550 §8.2, or restarted an encoder).
/// - A learned SSRC whose packet names another layer, or switches between media and repair:
///   `ridChanged`. The first mapping stays: browsers never move an SSRC to another RID within
///   one negotiation, and following a single packet's claim would reshuffle the layers under
///   the subscribers' keyframe-gated switches. A new negotiation builds a new value.
/// - A packet with both extensions is an RTX packet: the repaired RID decides (RFC 8852 §3.2;
///   an RTX stream may also carry a RID of its own).
///
/// Bitrate: each media packet's size goes into its layer's `BitrateWindow` (RTX is left out:
/// retransmissions and padding probes are not what the layer costs to forward).
///
/// A sans-IO value owned by the publisher's room: `received(ssrc:extensions:bytes:now:)` once
/// per incoming video packet, before anything else looks at the SSRC; `bitrate(layer:now:)`
/// and `mediaSSRC(layer:)` when choosing layers and sending keyframe requests. The per-packet
/// path allocates nothing: RIDs are compared as bytes and the tables are fixed at creation.
public struct SimulcastStreams: Sendable {
    /// The most layers tracked; further RIDs are ignored (the SDP refuses such offers).
    public static let maximumLayers = 3

    /// What a packet is, for the forwarder.
    public enum Classification: Sendable, Hashable {
        /// A packet of the layer's media stream (index into `rids`).
        case media(layer: Int)
        /// An RTX packet repairing the layer.
        case repair(layer: Int)
        /// Not a packet of any layer; the reason has been counted.
        case refused(Refusal)
    }

    /// Why a packet was refused.
    public enum Refusal: Sendable, Hashable, CaseIterable {
        /// Its RID or repaired RID is not one of the negotiated layers.
        case unknownRID
        /// Its SSRC is not learned yet and it carries no RID to learn it from.
        case unlearnedSSRC
        /// Its SSRC is new, and the stream its RID names already has a live SSRC.
        case layerTaken
        /// Its SSRC was learned as another layer's stream, or as media for repair or back.
        case ridChanged
    }

    /// Refused packets so far, by reason.
    public struct Refusals: Sendable, Hashable {
        public var unknownRID: UInt64 = 0
        public var unlearnedSSRC: UInt64 = 0
        public var layerTaken: UInt64 = 0
        public var ridChanged: UInt64 = 0

        /// All refusals together.
        public var total: UInt64 { unknownRID &+ unlearnedSSRC &+ layerTaken &+ ridChanged }

        mutating func count(_ refusal: Refusal) {
            switch refusal {
            case .unknownRID: unknownRID &+= 1
            case .unlearnedSSRC: unlearnedSSRC &+= 1
            case .layerTaken: layerTaken &+= 1
            case .ridChanged: ridChanged &+= 1
            }
        }
    }

    private struct Entry: Sendable {
        var ssrc: SSRC
        var lastSeen: MediaTime
    }

    /// The layers' RIDs in layer order (the offer's `a=simulcast:send` order).
    public let rids: [String]
    /// The RtpStreamId extension's local ID, nil when not negotiated.
    public let rtpStreamIDExtension: UInt8?
    /// The RepairedRtpStreamId extension's local ID, nil when not negotiated.
    public let repairedRTPStreamIDExtension: UInt8?
    /// How long an SSRC must have been silent before a new one may take its place (ns).
    public let replaceAfter: UInt64
    public private(set) var refusals = Refusals()
    private let ridBytes: [[UInt8]]
    /// Slot `2 × layer` holds the layer's media SSRC, slot `2 × layer + 1` its RTX SSRC.
    private var entries: [Entry?]
    private var meters: [BitrateWindow]

    /// `rids` in layer order (at most `maximumLayers` are used); the extension IDs as
    /// negotiated on the camera section; `replaceAfter` and `bitrateWindow` in nanoseconds.
    public init(rids: [String], rtpStreamIDExtension: UInt8?, repairedRTPStreamIDExtension: UInt8?,
                replaceAfter: UInt64 = 2_000_000_000, bitrateWindow: UInt64 = 1_000_000_000) {
        self.rids = Array(rids.prefix(Self.maximumLayers))
        self.rtpStreamIDExtension = rtpStreamIDExtension
        self.repairedRTPStreamIDExtension = repairedRTPStreamIDExtension
        self.replaceAfter = replaceAfter
        ridBytes = self.rids.map { Array($0.utf8) }
        entries = Array(repeating: nil, count: 2 * self.rids.count)
        // One window each, built apart: copies of one value would share their buffers until the
        // first packet of each layer copied them, an allocation on the packet path.
        meters = self.rids.map { _ in BitrateWindow(window: bitrateWindow) }
    }

    /// The number of layers.
    public var layerCount: Int { rids.count }

    /// Classifies one incoming packet of the camera, learning its SSRC from the RID extensions
    /// in `extensions` if it is new; `bytes` is the packet's size (counted for a media packet).
    public mutating func received(ssrc: SSRC, extensions: RTPHeaderExtensions, bytes: Int,
                                  now: MediaTime) -> Classification {
        var rid: ArraySlice<UInt8>?
        var repairedRID: ArraySlice<UInt8>?
        if rtpStreamIDExtension != nil || repairedRTPStreamIDExtension != nil {
            for element in extensions {
                if element.id == rtpStreamIDExtension {
                    rid = RTPHeaderExtensionData.rtpStreamID(element.data)
                } else if element.id == repairedRTPStreamIDExtension {
                    repairedRID = RTPHeaderExtensionData.rtpStreamID(element.data)
                }
            }
        }
        return received(ssrc: ssrc, rid: rid, repairedRID: repairedRID, bytes: bytes, now: now)
    }

    /// The same for a caller that has read the extensions itself: `rid` and `repairedRID` are
    /// the RtpStreamId and RepairedRtpStreamId bytes, nil (or empty) when absent.
    public mutating func received(ssrc: SSRC, rid: ArraySlice<UInt8>?, repairedRID: ArraySlice<UInt8>?,
                                  bytes: Int, now: MediaTime) -> Classification {
        var claim: Int?  // the slot the packet's extensions name
        if let repairedRID, !repairedRID.isEmpty {
            guard let layer = layer(named: repairedRID) else { return refuse(.unknownRID) }
            claim = 2 * layer + 1
        } else if let rid, !rid.isEmpty {
            guard let layer = layer(named: rid) else { return refuse(.unknownRID) }
            claim = 2 * layer
        }
        if let slot = slot(of: ssrc) {
            if let claim, claim != slot { return refuse(.ridChanged) }
            entries[slot]?.lastSeen = now
            return deliver(slot: slot, bytes: bytes, now: now)
        }
        guard let claim else { return refuse(.unlearnedSSRC) }
        if let holder = entries[claim], now.nanoseconds(since: holder.lastSeen) < replaceAfter {
            return refuse(.layerTaken)
        }
        entries[claim] = Entry(ssrc: ssrc, lastSeen: now)
        return deliver(slot: claim, bytes: bytes, now: now)
    }

    /// What `ssrc` has been learned as, without counting anything; nil when not learned.
    public func stream(of ssrc: SSRC) -> Classification? {
        guard let slot = slot(of: ssrc) else { return nil }
        return slot % 2 == 0 ? .media(layer: slot / 2) : .repair(layer: slot / 2)
    }

    /// The SSRC learned for the layer's media stream (where keyframe requests go), or nil.
    public func mediaSSRC(layer: Int) -> SSRC? {
        entries.indices.contains(2 * layer) ? entries[2 * layer]?.ssrc : nil
    }

    /// The SSRC learned for the layer's RTX stream, or nil.
    public func repairSSRC(layer: Int) -> SSRC? {
        entries.indices.contains(2 * layer + 1) ? entries[2 * layer + 1]?.ssrc : nil
    }

    /// The layer's media bitrate over the window ending at `now`, in bits per second; 0 for a
    /// layer that does not exist.
    public func bitrate(layer: Int, now: MediaTime) -> UInt64 {
        meters.indices.contains(layer) ? meters[layer].bitsPerSecond(now: now) : 0
    }

    private func layer(named rid: ArraySlice<UInt8>) -> Int? {
        for index in ridBytes.indices where Self.equal(ridBytes[index], rid) {
            return index
        }
        return nil
    }

    /// Byte by byte, by index: `elementsEqual` and `for … in` allocate their iterators when not
    /// specialized (debug builds).
    private static func equal(_ name: [UInt8], _ rid: ArraySlice<UInt8>) -> Bool {
        guard name.count == rid.count else { return false }
        var offset = 0
        while offset < name.count {
            guard name[offset] == rid[rid.startIndex + offset] else { return false }
            offset += 1
        }
        return true
    }

    private func slot(of ssrc: SSRC) -> Int? {
        for index in entries.indices where entries[index]?.ssrc == ssrc {
            return index
        }
        return nil
    }

    private mutating func deliver(slot: Int, bytes: Int, now: MediaTime) -> Classification {
        let layer = slot / 2
        guard slot % 2 == 0 else { return .repair(layer: layer) }
        meters[layer].add(bytes: bytes, now: now)
        return .media(layer: layer)
    }

    private mutating func refuse(_ refusal: Refusal) -> Classification {
        refusals.count(refusal)
        return .refused(refusal)
    }
}
