extension RTPHeaderRewriter {
    /// The packet with one more header extension element (RFC 8285), `id` carrying `data`: added
    /// to the packet's extension block, or in a new block after the CSRC list when it has none
    /// (one-byte form for IDs 1…14 and 1…16 bytes of data, else two-byte). Used on the way out
    /// to stamp the transport-wide sequence number on packets whose writers know nothing of it.
    /// nil, and nothing to send differently, when the element cannot be added: an ID the
    /// block's form cannot hold (a one-byte block and an ID above 14), data too long, a block
    /// that would exceed the 16-bit length, or a header that does not match the bytes.
    public static func addingExtension(id: UInt8, data: [UInt8], to packet: [UInt8], header: RTPHeader) -> [UInt8]? {
        guard id != 0, header.payloadRange.upperBound <= packet.count else { return nil }
        guard let profile = header.extensionProfile else { return addingBlock(id: id, data: data, to: packet, header: header) }
        guard let form = RTPHeaderExtensionForm(profile: profile), let element = element(id: id, data: data, form: form)
        else { return nil }
        let block = header.extensionRange
        guard block.lowerBound >= RTPHeader.fixedLength + 4, block.upperBound <= packet.count else { return nil }
        var body = Array(packet[block]) + element
        while body.count % 4 != 0 { body.append(0) }
        guard body.count / 4 <= Int(UInt16.max) else { return nil }
        var out = Array(packet[..<block.lowerBound])
        out[block.lowerBound - 2] = UInt8((body.count / 4) >> 8)
        out[block.lowerBound - 1] = UInt8(truncatingIfNeeded: body.count / 4)
        out += body
        out += packet[block.upperBound...]
        return out
    }

    /// A new extension block holding the element, inserted after the CSRC list; sets X.
    private static func addingBlock(id: UInt8, data: [UInt8], to packet: [UInt8], header: RTPHeader) -> [UInt8]? {
        let form: RTPHeaderExtensionForm = id <= 14 && (1...16).contains(data.count) ? .oneByte : .twoByte(appBits: 0)
        guard var body = element(id: id, data: data, form: form) else { return nil }
        while body.count % 4 != 0 { body.append(0) }
        let csrcEnd = header.csrcRange.upperBound
        guard csrcEnd <= packet.count else { return nil }
        var out = Array(packet[..<csrcEnd])
        out[0] |= 0x10
        out += [UInt8(form.profile >> 8), UInt8(truncatingIfNeeded: form.profile),
                UInt8((body.count / 4) >> 8), UInt8(truncatingIfNeeded: body.count / 4)]
        out += body
        out += packet[csrcEnd...]
        return out
    }

    /// One element's bytes in `form`, nil when the form cannot carry it.
    private static func element(id: UInt8, data: [UInt8], form: RTPHeaderExtensionForm) -> [UInt8]? {
        switch form {
        case .oneByte:
            guard (1...14).contains(id), (1...16).contains(data.count) else { return nil }
            return [id << 4 | UInt8(data.count - 1)] + data
        case .twoByte:
            guard data.count <= 255 else { return nil }
            return [id, UInt8(data.count)] + data
        }
    }
}
