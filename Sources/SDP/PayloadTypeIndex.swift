import ChorusCore

/// The `a=rtpmap`, `a=fmtp` and `a=rtcp-fb` lines of one media description, indexed by payload
/// type once so that codec negotiation does constant-time lookups. (A hostile offer may carry
/// thousands of attribute lines; scanning them per payload type would be quadratic.)
///
/// The first line for a payload type wins; later duplicates are ignored.
struct PayloadTypeIndex {
    private var rtpMaps = [RTPMap?](repeating: nil, count: 128)
    private var parameters = [FormatParameters?](repeating: nil, count: 128)
    private var feedback = [[RTCPFeedback]](repeating: [], count: 128)
    private var wildcardFeedback: [RTCPFeedback] = []
    /// Payload types whose `a=fmtp` carries `apt=<key>` (RTX, RFC 4588 §8.6), by associated type.
    private var retransmission = [[PayloadType]](repeating: [], count: 128)

    init(_ section: MediaDescription) {
        for attribute in section.attributes {
            switch attribute {
            case .rtpMap(let map):
                let slot = Self.slot(map.payloadType)
                if rtpMaps.indices.contains(slot), rtpMaps[slot] == nil { rtpMaps[slot] = map }
            case .formatParameters(let fmtp):
                guard let pt = fmtp.payloadType else { continue }
                let slot = Self.slot(pt)
                if parameters.indices.contains(slot), parameters[slot] == nil { parameters[slot] = fmtp }
            case .rtcpFeedback(let entry):
                if let pt = entry.payloadType {
                    let slot = Self.slot(pt)
                    if feedback.indices.contains(slot) { feedback[slot].append(entry) }
                } else {
                    wildcardFeedback.append(entry)
                }
            default:
                continue
            }
        }
        indexRetransmission()
    }

    private mutating func indexRetransmission() {
        for (slot, fmtp) in parameters.enumerated() {
            guard let fmtp, let apt = fmtp.parameter("apt").flatMap({ SDPSyntax.payloadType($0) }),
                  let rtx = PayloadType(rawValue: UInt8(truncatingIfNeeded: slot))
            else { continue }
            let target = Self.slot(apt)
            if retransmission.indices.contains(target) { retransmission[target].append(rtx) }
        }
    }

    private static func slot(_ pt: PayloadType) -> Int { Int(pt.rawValue) }

    func rtpMap(_ pt: PayloadType) -> RTPMap? {
        rtpMaps.indices.contains(Self.slot(pt)) ? rtpMaps[Self.slot(pt)] : nil
    }

    func formatParameters(_ pt: PayloadType) -> FormatParameters? {
        parameters.indices.contains(Self.slot(pt)) ? parameters[Self.slot(pt)] : nil
    }

    /// The feedback offered for `pt`: its own lines, then the `*` lines bound to it.
    func feedback(for pt: PayloadType) -> [RTCPFeedback] {
        let own = feedback.indices.contains(Self.slot(pt)) ? feedback[Self.slot(pt)] : []
        return own + wildcardFeedback.map { $0.with(payloadType: pt) }
    }

    /// Payload types declaring `apt=<pt>`, in payload-type order.
    func retransmissionTypes(for pt: PayloadType) -> [PayloadType] {
        retransmission.indices.contains(Self.slot(pt)) ? retransmission[Self.slot(pt)] : []
    }
}
