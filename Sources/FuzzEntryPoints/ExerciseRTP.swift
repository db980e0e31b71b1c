import ChorusCore
import RTP
import VideoForwarder

/// RTP as the media path reads it after SRTP unprotect: the header (on an array, and on a slice
/// that does not start at index 0, as a slice of a larger receive buffer does), the packet's
/// CSRCs and RFC 8285 elements, the extension values through a map, the VP8 payload descriptor
/// and payload header, the in-place rewrites the forwarder applies, which must keep the
/// packet's layout, and simulcast SSRC learning from its RID extensions. The whole input is also read as a VP8 payload on its own.
public func exerciseRTP(_ bytes: [UInt8]) {
    exerciseRTPPacket(bytes[...])
    let embedded = [0xEE, 0xEE, 0xEE] + bytes + [0xEE]
    exerciseRTPPacket(embedded[3..<(3 + bytes.count)])
    exerciseVP8(bytes[...], packet: nil)
}

func exerciseRTPPacket(_ bytes: ArraySlice<UInt8>) {
    let headerOnly = try? RTPHeader(parsing: bytes)
    let packet: RTPPacket
    do {
        packet = try RTPPacket(parsing: bytes)
    } catch {
        fuzzRequire(headerOnly == nil, "RTPHeader parsed what RTPPacket refused")
        consume(error)
        return
    }
    let header = packet.header
    fuzzRequire(headerOnly == header, "RTPHeader and RTPPacket disagree")
    exerciseForwarder(packet)
    exerciseSimulcast(packet)
    checkLayout(header, count: bytes.count)
    consume((header.marker, header.payloadType.description, header.sequenceNumber, header.timestamp,
             header.ssrc.description, header.hasPadding, header.hasExtension, header.headerLength))

    var csrcCount = 0
    for csrc in packet.csrcs {
        consume(csrc.rawValue)
        csrcCount += 1
    }
    fuzzRequire(csrcCount == header.csrcCount, "CSRC list length differs from CC")

    let extensions = packet.headerExtensions
    var elements: [RTPHeaderExtensions.Element] = []
    for element in extensions {
        fuzzRequire(element.id != 0, "a header extension element with ID 0")
        elements.append(element)
        consume(RTPHeaderExtensionData.mid(element.data))
        consume(RTPHeaderExtensionData.midString(element.data))
        consume(RTPHeaderExtensionData.transportSequenceNumber(element.data))
        consume(AudioLevelIndication(data: element.data))
        consume(AbsoluteSendTime(data: element.data)?.nanoseconds)
        consume(Array(CSRCAudioLevels(data: element.data)))
        if elements.count > 256 { break }
    }
    for id in [UInt8(1), 2, 3, 4, 5, 14, 15, 255] { consume(extensions.first(id: id)) }
    let map = RTPHeaderExtensionMap(mid: 1, audioLevel: 2, csrcAudioLevels: 3, transportSequenceNumber: 4,
                                    absoluteSendTime: 5)
    let values = map.decode(extensions)
    consume((values.midString, values.audioLevel, values.csrcAudioLevels.map(Array.init), values.transportSequenceNumber,
             values.absoluteSendTime?.nanoseconds))

    exerciseVP8(packet.payload, packet: packet)
    exerciseRewrites(bytes, header: header, elements: elements)
    exerciseReserialization(header: header, packet: packet, elements: elements)
}

/// The ranges the header reports lie inside the packet, in order.
func checkLayout(_ header: RTPHeader, count: Int) {
    fuzzRequire(header.packetLength == count, "packetLength \(header.packetLength) != \(count) bytes parsed")
    fuzzRequire(header.csrcRange.lowerBound == RTPHeader.fixedLength, "CSRCs do not follow the fixed header")
    fuzzRequire(header.csrcRange.upperBound <= header.extensionRange.lowerBound, "extension overlaps the CSRCs")
    fuzzRequire(header.extensionRange.upperBound <= header.payloadRange.lowerBound, "payload overlaps the extension")
    fuzzRequire(header.payloadRange.upperBound <= count, "payload runs past the packet")
    fuzzRequire(header.paddingLength >= 0 && header.paddingLength <= count - header.headerLength, "bad padding length")
}

/// The VP8 descriptor of `payload`; when it comes from `packet`, the in-place rewrites too.
func exerciseVP8(_ payload: ArraySlice<UInt8>, packet: RTPPacket?) {
    let descriptor: VP8PayloadDescriptor
    do {
        descriptor = try VP8PayloadDescriptor(parsing: payload)
    } catch {
        consume(error)
        return
    }
    fuzzRequire(descriptor.length >= 1 && descriptor.length < payload.count, "VP8 descriptor length out of range")
    consume((descriptor.isStartOfFrame, descriptor.isKeyFrame(payload: payload), descriptor.payloadHeader(payload: payload)))
    consume(try? VP8PayloadHeader(parsing: payload.dropFirst(descriptor.length)))
    if let pictureID = descriptor.pictureID {
        consume(VP8PayloadDescriptor.nextPictureID(after: pictureID, long: descriptor.hasLongPictureID))
    }
    guard let packet else { return }
    let offset = packet.header.payloadRange.lowerBound
    var copy = Array(packet.bytes)
    let pictureOK = descriptor.rewritePictureID(0x7FFF, in: &copy, payloadOffset: offset)
    let tl0OK = descriptor.rewriteTL0PictureIndex(0xA5, in: &copy, payloadOffset: offset)
    let keyOK = descriptor.rewriteKeyIndex(0x1F, in: &copy, payloadOffset: offset)
    fuzzRequire(pictureOK == (descriptor.pictureID != nil), "rewritePictureID refused an existing field")
    fuzzRequire(tl0OK == (descriptor.tl0PictureIndex != nil), "rewriteTL0PictureIndex refused an existing field")
    fuzzRequire(keyOK == (descriptor.keyIndex != nil), "rewriteKeyIndex refused an existing field")
    fuzzRequire(copy.count == packet.bytes.count, "a VP8 rewrite changed the packet size")
    // Rewritten values read back; the layout stays.
    let reparsed = try? VP8PayloadDescriptor(parsing: copy[offset..<(offset + payload.count)])
    fuzzRequire(reparsed?.length == descriptor.length, "a VP8 rewrite changed the descriptor layout")
    if descriptor.pictureID != nil {
        fuzzRequire(reparsed?.pictureID == (descriptor.hasLongPictureID ? 0x7FFF : 0x7F), "picture ID not rewritten")
    }
    // Offsets that cannot fit are refused, never trapping.
    for bad in [-1, Int.min, Int.max, copy.count, copy.count - 1] {
        consume(descriptor.rewritePictureID(1, in: &copy, payloadOffset: bad))
        consume(descriptor.rewriteTL0PictureIndex(1, in: &copy, payloadOffset: bad))
        consume(descriptor.rewriteKeyIndex(1, in: &copy, payloadOffset: bad))
    }
}

/// The forwarder's in-place edits on a copy (an array, and a slice at a non-zero index): the
/// edited packet must parse to the same layout with the new values.
func exerciseRewrites(_ bytes: ArraySlice<UInt8>, header: RTPHeader, elements: [RTPHeaderExtensions.Element]) {
    var array = Array(bytes)
    rewrite(&array, header: header, elements: elements)
    var backing = [0x11, 0x22] + Array(bytes)
    var slice = backing[2...]
    backing = []
    rewrite(&slice, header: header, elements: elements)
    fuzzRequire(Array(slice) == array, "rewrites differ between an array and a slice")

    if !header.hasPadding {
        let count = Int(bytes.last ?? 0) % 255 + 1
        var padded = array
        fuzzRequire(RTPHeaderRewriter.appendPadding(count: count, to: &padded), "appendPadding refused a valid packet")
        guard let reparsed = try? RTPHeader(parsing: padded) else {
            fatalError("fuzz invariant failed: appendPadding made an unparseable packet")
        }
        fuzzRequire(reparsed.paddingLength == count && reparsed.payloadRange == header.payloadRange,
                    "appendPadding changed the layout")
    }
}

func rewrite<Bytes: MutableCollection<UInt8>>(
    _ packet: inout Bytes, header: RTPHeader, elements: [RTPHeaderExtensions.Element]
) where Bytes.Index == Int {
    fuzzRequire(RTPHeaderRewriter.setSequenceNumber(0xBEEF, in: &packet), "setSequenceNumber refused")
    fuzzRequire(RTPHeaderRewriter.setTimestamp(0xDEAD_BEEF, in: &packet), "setTimestamp refused")
    fuzzRequire(RTPHeaderRewriter.setSSRC(SSRC(0x1234_5678), in: &packet), "setSSRC refused")
    fuzzRequire(RTPHeaderRewriter.setPayloadType(PayloadType(masking: 96), in: &packet), "setPayloadType refused")
    fuzzRequire(RTPHeaderRewriter.setMarker(!header.marker, in: &packet), "setMarker refused")
    for element in elements.prefix(16) {
        let filler = [UInt8](repeating: 0x5A, count: element.data.count)
        fuzzRequire(RTPHeaderRewriter.overwriteExtension(id: element.id, with: filler, in: &packet, header: header)
                        || elements.first(where: { $0.id == element.id })?.data.count != element.data.count,
                    "overwriteExtension refused an existing element")
        consume(RTPHeaderRewriter.setTransportSequenceNumber(0x0102, extensionID: element.id, in: &packet,
                                                             header: header))
        consume(RTPHeaderRewriter.setAbsoluteSendTime(AbsoluteSendTime(rawValue: 0x0A_0B0C), extensionID: element.id,
                                                      in: &packet, header: header))
    }
    consume(RTPHeaderRewriter.overwriteExtension(id: 0, with: [1], in: &packet, header: header))
    let reparsed: RTPHeader
    do {
        reparsed = try RTPHeader(parsing: Array(packet))
    } catch {
        fatalError("fuzz invariant failed: rewriting made the packet unparseable (\(error))")
    }
    fuzzRequire(reparsed.payloadRange == header.payloadRange && reparsed.extensionRange == header.extensionRange,
                "rewriting changed the packet layout")
    fuzzRequire(reparsed.sequenceNumber == 0xBEEF && reparsed.timestamp == 0xDEAD_BEEF
                    && reparsed.ssrc == SSRC(0x1234_5678) && reparsed.payloadType.rawValue == 96
                    && reparsed.marker == !header.marker, "a rewritten field does not read back")
}

/// Writes the parsed header again with `RTPHeaderFields`: when it accepts the values, the output
/// parses back to the same fields and elements.
func exerciseReserialization(header: RTPHeader, packet: RTPPacket, elements: [RTPHeaderExtensions.Element]) {
    let fields = RTPHeaderFields(
        marker: header.marker, payloadType: header.payloadType, sequenceNumber: header.sequenceNumber,
        timestamp: header.timestamp, ssrc: header.ssrc, csrcs: Array(packet.csrcs),
        extensions: elements.map { RTPHeaderExtensionElement(id: $0.id, value: .bytes(Array($0.data))) })
    var out: [UInt8] = []
    do {
        try fields.serialize(into: &out)
    } catch {
        consume(error)
        return
    }
    out += packet.payload
    guard let again = try? RTPPacket(parsing: out) else {
        fatalError("fuzz invariant failed: RTPHeaderFields wrote a header RTPHeader cannot parse: \(out)")
    }
    fuzzRequire(again.header.sequenceNumber == header.sequenceNumber && again.header.ssrc == header.ssrc
                    && again.header.timestamp == header.timestamp && again.payload == packet.payload,
                "re-serialized header reads back different values")
    fuzzRequire(Array(again.csrcs) == Array(packet.csrcs), "re-serialized CSRCs differ")
    let reread = again.headerExtensions.map { ($0.id, Array($0.data)) }
    fuzzRequire(reread.map(\.0) == elements.map(\.id) && reread.map(\.1) == elements.map { Array($0.data) },
                "re-serialized header extension elements differ")
}

/// The forwarder's view of a peer's video packet: keyframe detection for both codecs, then a
/// slot switch and rewrite (a fresh header, the VP8 fields rewritten; the slot's temporal layer
/// target taken from the packet, which the switch packet passes whatever its TID) and a
/// NACK-time rewrite of the same packet, which must produce the same bytes; a duplicate of the
/// packet is written the same again.
func exerciseForwarder(_ packet: RTPPacket) {
    let header = packet.header
    let bytes = Array(packet.bytes)
    let payload = bytes[header.payloadRange]
    let vp8 = try? VP8PayloadDescriptor(parsing: payload)
    consume(KeyframeDetector.isKeyframeStart(codec: .vp8, payload: payload, vp8: vp8))
    consume(KeyframeDetector.isKeyframeStart(codec: .h264, payload: payload, vp8: nil))
    var slot = SlotStreamRewriter(ssrc: SSRC(7), payloadType: PayloadType(96)!, initialSequenceNumber: 65_535,
                                  initialTimestamp: 1)
    slot.targetTemporalLayer = UInt8(truncatingIfNeeded: header.sequenceNumber) & 3
    slot.switchSource(to: header.ssrc, at: header, vp8: vp8, now: .seconds(1))
    var out: [UInt8] = []
    guard let sequence = slot.rewrite(bytes, header: header, vp8: vp8, now: .seconds(1), into: &out) else {
        fuzzRequire(false, "the keyframe a slot switched on was not forwarded")
        return
    }
    fuzzRequire(out.count == 16 + header.payloadRange.count, "a forwarded packet is not header + CSRC + payload")
    let written = try? RTPHeader(parsing: out)
    fuzzRequire(written?.sequenceNumber == sequence && written?.csrcCount == 1, "the forwarded header does not parse back")
    guard let (mapping, source) = slot.mapping(forSlotSequence: sequence) else {
        fuzzRequire(false, "a forwarded packet is missing from the NACK history")
        return
    }
    fuzzRequire(source == header.sequenceNumber, "the NACK history maps to another packet")
    var again: [UInt8] = []
    slot.rewriteAgain(bytes, header: header, vp8: vp8, mapping: mapping, into: &again)
    fuzzRequire(again == out, "a retransmission differs from the original")
    var duplicate: [UInt8] = []
    let repeated = slot.rewrite(bytes, header: header, vp8: vp8, now: .seconds(1), into: &duplicate)
    fuzzRequire(repeated == sequence && duplicate == out, "a duplicate was written differently")
}

/// The packet as one of a simulcast camera's (RIDs q, h, f in extension IDs 1 and 2, the low
/// IDs the corpus's packets use): whatever it teaches, its SSRC classifies the same later
/// without extensions, and a refused packet teaches nothing.
func exerciseSimulcast(_ packet: RTPPacket) {
    var streams = SimulcastStreams(rids: ["q", "h", "f"], rtpStreamIDExtension: 1, repairedRTPStreamIDExtension: 2)
    let ssrc = packet.header.ssrc
    let first = streams.received(ssrc: ssrc, extensions: packet.headerExtensions, bytes: packet.bytes.count,
                                 now: .seconds(1))
    let again = streams.received(ssrc: ssrc, rid: nil, repairedRID: nil, bytes: packet.bytes.count, now: .seconds(2))
    switch first {
    case .media, .repair:
        fuzzRequire(again == first && streams.stream(of: ssrc) == first, "a learned SSRC lost its layer")
    case .refused:
        fuzzRequire(again == .refused(.unlearnedSSRC) && streams.stream(of: ssrc) == nil, "a refused packet taught an SSRC")
    }
    fuzzRequire(streams.refusals.total <= 2, "more refusals than packets")
    for layer in 0..<3 { consume(streams.bitrate(layer: layer, now: .seconds(2))) }
}
