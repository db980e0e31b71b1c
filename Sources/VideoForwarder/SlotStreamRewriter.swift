import ChorusCore
import RTP

/// How one publisher's packets map into a slot's stream: the offsets added to its sequence
/// numbers, timestamps and VP8 picture ID, TL0PICIDX and KEYIDX. Set at the switch (the
/// publisher's keyframe); while a temporal layer is dropped, each forwarded packet's sequence
/// number and picture ID offsets also take away the values dropped before it. The slot keeps
/// the mapping each packet was written with, so a retransmission rewrites a cached packet
/// exactly as the original was rewritten.
public struct SlotMapping: Sendable, Equatable {
    /// The publisher's camera SSRC (also the CSRC of every packet it contributes, RFC 3550 mixer).
    public let source: SSRC
    let sequenceDelta: UInt16
    let timestampDelta: UInt32
    let pictureIDDelta: UInt16
    let tl0Delta: UInt8
    let keyIndexDelta: UInt8

    /// This mapping for a packet with `sequences` sequence numbers and `pictureIDs` picture IDs
    /// dropped before it since the switch (modulo 2^16, which 2^15 and 2^7 divide).
    func removing(sequences: UInt64, pictureIDs: UInt64) -> SlotMapping {
        SlotMapping(source: source, sequenceDelta: sequenceDelta &- UInt16(truncatingIfNeeded: sequences),
                    timestampDelta: timestampDelta, pictureIDDelta: pictureIDDelta &- UInt16(truncatingIfNeeded: pictureIDs),
                    tl0Delta: tl0Delta, keyIndexDelta: keyIndexDelta)
    }

    /// Writes `packet` (an unprotected RTP packet of `source`, parsed as `header`, with its VP8
    /// descriptor when VP8) as a packet of the slot's stream into `out`: a fresh header (no
    /// header extensions, whose IDs are the publisher's; CSRC = the publisher; no padding),
    /// then the payload with the VP8 fields rewritten. Returns the slot sequence number.
    @discardableResult
    func write(
        _ packet: [UInt8], header: RTPHeader, vp8: VP8PayloadDescriptor?, ssrc: SSRC, payloadType: PayloadType,
        into out: inout [UInt8]
    ) -> UInt16 {
        let sequence = header.sequenceNumber &+ sequenceDelta
        out.removeAll(keepingCapacity: true)
        out.appendWriting(count: 16) { writer in
            writer.put(0x81)  // V=2, no padding, no extension, one CSRC
            writer.put((header.marker ? 0x80 : 0) | payloadType.rawValue)
            writer.put16(sequence)
            writer.put32(header.timestamp &+ timestampDelta)
            writer.put32(ssrc.rawValue)
            writer.put32(source.rawValue)
        }
        let payloadOffset = out.count
        let range = header.payloadRange
        guard range.lowerBound >= 0, range.upperBound <= packet.count, range.lowerBound <= range.upperBound else {
            return sequence
        }
        out.append(contentsOf: packet[range])
        if let vp8 {
            if let pictureID = vp8.pictureID {
                vp8.rewritePictureID(pictureID &+ pictureIDDelta, in: &out, payloadOffset: payloadOffset)
            }
            if let tl0 = vp8.tl0PictureIndex {
                vp8.rewriteTL0PictureIndex(tl0 &+ tl0Delta, in: &out, payloadOffset: payloadOffset)
            }
            if let keyIndex = vp8.keyIndex {
                vp8.rewriteKeyIndex((keyIndex &+ keyIndexDelta) & 0x1F, in: &out, payloadOffset: payloadOffset)
            }
        }
        return sequence
    }
}

/// One video slot's outgoing stream toward one subscriber: a stable SSRC whose sequence
/// numbers, timestamps and VP8 picture IDs stay continuous while the publisher behind it
/// changes. Sans-IO: the room calls `switchSource` on the new publisher's keyframe, `rewrite`
/// for each of the current publisher's packets, and `mapping(forSlotSequence:)` to answer a
/// subscriber's NACK.
///
/// On a switch the offsets are chosen so that the new publisher's keyframe follows the last
/// packet written: sequence number +1, picture ID +1, TL0PICIDX +1, KEYIDX +1, and the
/// timestamp advanced by the wall-clock time since the last packet (at least 1 tick), as
/// mediasoup and Jitsi do; the receiver sees one stream with a keyframe where the picture
/// changed. Packets of the previous publisher, and the new one's packets older than its
/// keyframe, are not forwarded.
///
/// Temporal layers (VP8): `targetTemporalLayer` makes the slot forward only the frames of TID
/// ≤ target (`TemporalLayerFilter`: down at the next frame, up at a layer sync frame or key
/// frame). The dropped packets' sequence numbers and the dropped frames' picture IDs are taken
/// out of the slot's stream (`SequenceContinuity`), so the subscriber sees both continuous.
/// Picture IDs must be continuous, not only increasing: libwebrtc's receiver (RtpVp8RefFinder)
/// counts every picture ID it skipped as a frame not yet received, and holds back each later
/// frame whose references lie before that gap until it arrives: with gaps, the picture would
/// freeze until the next key frame. mediasoup rewrites them the same way. TL0PICIDX needs no
/// such care: it counts base layer frames, which are never dropped (the lowest target is 0),
/// so it stays continuous on its own; KEYIDX counts key frames, all base layer too.
public struct SlotStreamRewriter: Sendable {
    public let ssrc: SSRC
    /// The payload type the subscriber negotiated for the codec (publishers' may differ).
    public var payloadType: PayloadType
    /// The mapping of the publisher forwarded now; nil before the first switch.
    public private(set) var mapping: SlotMapping?
    /// Extended sequence number of the current publisher's keyframe: older packets are dropped.
    private var firstSourceSequence: UInt64 = 0
    private var sourceSequences = SequenceNumberUnwrapper()
    /// The newest values written: where the next publisher's stream continues from.
    private var lastSequence: UInt16
    public private(set) var lastTimestamp: UInt32
    private var lastPictureID: UInt16?
    private var lastTL0: UInt8?
    private var lastKeyIndex: UInt8?
    private var lastWrittenAt: MediaTime?
    private var temporal = TemporalLayerFilter()
    /// The dropped sequence numbers and picture IDs since the switch, extended.
    private var droppedSequences = SequenceContinuity(capacity: 128)
    private var droppedPictureIDs = SequenceContinuity(capacity: 64)
    private var pictureIDs = WrappingCounterUnwrapper(bitWidth: 15)
    /// Packets a temporal layer drop should have removed after newer ones went out: the
    /// subscriber sees each as one lost packet.
    public private(set) var lateDrops: UInt64 = 0
    /// Which mapping produced each recent slot sequence number, for NACKs (about 1 s of video).
    private var history: [HistoryEntry]
    private static let historyMask = 1_023

    struct HistoryEntry: Sendable {
        var slotSequence: UInt16
        var sourceSequence: UInt16
        var mapping: SlotMapping?
    }

    public init(ssrc: SSRC, payloadType: PayloadType, initialSequenceNumber: UInt16, initialTimestamp: UInt32) {
        self.ssrc = ssrc
        self.payloadType = payloadType
        lastSequence = initialSequenceNumber &- 1
        lastTimestamp = initialTimestamp
        history = Array(repeating: HistoryEntry(slotSequence: 0, sourceSequence: 0, mapping: nil),
                        count: Self.historyMask + 1)
    }

    /// The publisher whose packets this slot forwards now.
    public var source: SSRC? { mapping?.source }

    /// The highest VP8 temporal layer (TID) to forward; `TemporalLayerFilter.allLayers` (the
    /// default) forwards them all. Applies from the next frame, or for going up from the next
    /// layer sync frame.
    public var targetTemporalLayer: UInt8 {
        get { temporal.target }
        set { temporal.target = newValue }
    }

    /// The highest TID forwarded now.
    public var currentTemporalLayer: UInt8 { temporal.current }

    /// Frames left out for their temporal layer.
    public var temporalFramesDropped: UInt64 { temporal.framesDropped }

    /// Starts forwarding `source` from `header`'s packet, which should start a keyframe.
    /// `clockRate` converts the time since the last packet into timestamp ticks.
    public mutating func switchSource(
        to source: SSRC, at header: RTPHeader, vp8: VP8PayloadDescriptor?, now: MediaTime, clockRate: UInt32 = 90_000
    ) {
        let elapsed = lastWrittenAt.map { now.nanoseconds(since: $0) } ?? 0
        // In microseconds, so no clock rate (a UInt32) can overflow the product.
        let micros = min(elapsed, 10_000_000_000) / 1_000
        let ticks = UInt32(truncatingIfNeeded: micros * UInt64(clockRate) / 1_000_000)
        let timestamp = lastTimestamp &+ max(1, ticks)
        let pictureDelta: UInt16 = switch (lastPictureID, vp8?.pictureID) {
        case let (last?, first?): ((last &+ 1) &- first) & 0x7FFF
        default: 0
        }
        let tl0Delta: UInt8 = switch (lastTL0, vp8?.tl0PictureIndex) {
        case let (last?, first?): (last &+ 1) &- first
        default: 0
        }
        let keyDelta: UInt8 = switch (lastKeyIndex, vp8?.keyIndex) {
        case let (last?, first?): ((last &+ 1) &- first) & 0x1F
        default: 0
        }
        mapping = SlotMapping(
            source: source, sequenceDelta: (lastSequence &+ 1) &- header.sequenceNumber,
            timestampDelta: timestamp &- header.timestamp, pictureIDDelta: pictureDelta, tl0Delta: tl0Delta,
            keyIndexDelta: keyDelta)
        sourceSequences = SequenceNumberUnwrapper()
        firstSourceSequence = sourceSequences.unwrap(header.sequenceNumber)
        temporal.reset(keyFrameTimestamp: header.timestamp)
        droppedSequences.reset()
        droppedPictureIDs.reset()
        pictureIDs = WrappingCounterUnwrapper(bitWidth: vp8?.hasLongPictureID == false ? 7 : 15)
    }

    /// Stops forwarding (the slot is empty); the stream continues from its last values when a
    /// publisher is switched in again.
    public mutating func clearSource() {
        mapping = nil
    }

    /// Writes the current publisher's packet into `out` as a packet of this slot; returns its
    /// slot sequence number, or nil (nothing written) for a packet of another publisher or one
    /// older than the switch.
    public mutating func rewrite(
        _ packet: [UInt8], header: RTPHeader, vp8: VP8PayloadDescriptor?, now: MediaTime, into out: inout [UInt8]
    ) -> UInt16? {
        guard let base = self.mapping, base.source == header.ssrc else { return nil }
        let extended = sourceSequences.unwrap(header.sequenceNumber)
        guard extended >= firstSourceSequence,
              let mapping = admit(packet, header: header, vp8: vp8, sequence: extended, base: base)
        else { return nil }
        let sequence = mapping.write(packet, header: header, vp8: vp8, ssrc: ssrc, payloadType: payloadType, into: &out)
        remember(sequence, source: header.sequenceNumber, mapping: mapping)
        if Int16(bitPattern: sequence &- lastSequence) > 0 { lastSequence = sequence }
        let timestamp = header.timestamp &+ mapping.timestampDelta
        if Int32(bitPattern: timestamp &- lastTimestamp) > 0 { lastTimestamp = timestamp }
        if let pictureID = vp8?.pictureID {
            let written = (pictureID &+ mapping.pictureIDDelta) & 0x7FFF
            if vp8?.hasLongPictureID == false, let last = lastPictureID {
                let step = (written &- last) & 0x7F  // a 7-bit field: compare in its own space
                if step != 0, step < 0x40 { lastPictureID = (last &+ step) & 0x7FFF }
            } else if lastPictureID.map({ Self.isNewerPictureID(written, than: $0) }) ?? true {
                lastPictureID = written
            }
        }
        if let tl0 = vp8?.tl0PictureIndex {
            let written = tl0 &+ mapping.tl0Delta
            if lastTL0.map({ Int8(bitPattern: written &- $0) > 0 }) ?? true { lastTL0 = written }
        }
        if let keyIndex = vp8?.keyIndex {
            let written = (keyIndex &+ mapping.keyIndexDelta) & 0x1F
            if lastKeyIndex.map({ (written &- $0) & 0x1F < 16 }) ?? true { lastKeyIndex = written }
        }
        lastWrittenAt = now
        return sequence
    }

    /// The publisher packet and mapping behind a slot sequence number the subscriber NACKs,
    /// while it is in the history (the last 1024 packets).
    public func mapping(forSlotSequence sequence: UInt16) -> (mapping: SlotMapping, sourceSequence: UInt16)? {
        let entry = history[Int(sequence) & Self.historyMask]
        guard entry.slotSequence == sequence, let mapping = entry.mapping else { return nil }
        return (mapping, entry.sourceSequence)
    }

    /// Rewrites a cached packet for a retransmission exactly as it was first sent.
    public func rewriteAgain(
        _ packet: [UInt8], header: RTPHeader, vp8: VP8PayloadDescriptor?, mapping: SlotMapping, into out: inout [UInt8]
    ) {
        mapping.write(packet, header: header, vp8: vp8, ssrc: ssrc, payloadType: payloadType, into: &out)
    }

    /// The mapping for one packet of the current publisher, its dropped predecessors taken
    /// out; nil when the packet is not forwarded (a temporal layer above the target, or a
    /// reordered packet too old to place), its sequence number and picture ID then dropped.
    private mutating func admit(
        _ packet: [UInt8], header: RTPHeader, vp8: VP8PayloadDescriptor?, sequence: UInt64, base: SlotMapping
    ) -> SlotMapping? {
        guard let vp8 else {
            return droppedSequences.offset(of: sequence).map { base.removing(sequences: $0, pictureIDs: 0) }
        }
        let range = header.payloadRange
        let keyFrame = range.lowerBound >= 0 && range.upperBound <= packet.count && range.lowerBound <= range.upperBound
            && vp8.isKeyFrame(payload: packet[range])
        let pictureID = vp8.pictureID.map { pictureIDs.unwrap(UInt64($0)) }
        if temporal.admit(timestamp: header.timestamp, temporalLayer: vp8.temporalLayerID, layerSync: vp8.isLayerSync,
                          keyFrame: keyFrame) {
            let pictureOffset = pictureID.map { droppedPictureIDs.offset(of: $0) } ?? 0
            if let pictureOffset, let sequenceOffset = droppedSequences.offset(of: sequence) {
                return base.removing(sequences: sequenceOffset, pictureIDs: pictureOffset)
            }
        } else if let pictureID {
            droppedPictureIDs.drop(pictureID)
        }
        if !droppedSequences.drop(sequence) { lateDrops &+= 1 }
        return nil
    }

    private mutating func remember(_ sequence: UInt16, source: UInt16, mapping: SlotMapping) {
        history[Int(sequence) & Self.historyMask] = HistoryEntry(
            slotSequence: sequence, sourceSequence: source, mapping: mapping)
    }

    /// Picture IDs are 15-bit: newer when less than half the space ahead.
    static func isNewerPictureID(_ value: UInt16, than other: UInt16) -> Bool {
        let distance = (value &- other) & 0x7FFF
        return distance != 0 && distance < 0x4000
    }
}
