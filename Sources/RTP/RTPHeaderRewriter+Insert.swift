extension RTPHeaderRewriter {
    /// The packet with one more header extension element (RFC 8285), `id` carrying `data`: added
    /// to the packet's extension block, or in a new block after the CSRC list when it has none
    /// (one-byte form for IDs 1…14 and 1…16 bytes of data, else two-byte). Used on the way out
    /// to stamp the transport-wide sequence number on packets whose writers know nothing of it.
    /// nil, and nothing to send differently, when the element cannot be added: an ID the
    /// block's form cannot hold (a one-byte block and an ID above 14), data too long, a block
    /// that would exceed the 16-bit length, or a header that does not match the bytes.
    public static func addingExtension(id: UInt8, data: [UInt8], to packet: [UInt8], header: RTPHeader) -> [UInt8]? {
        data.withUnsafeBytes { addingExtension(id: id, data: $0, to: packet, header: header) }
    }

    /// The same, written in one allocation: the result is built at its final size, with room
    /// for `extraCapacity` more bytes (an SRTP tag appended next then needs no second buffer).
    /// The per-packet send path uses this form (no allocation but the result's).
    public static func addingExtension(id: UInt8, data: UnsafeRawBufferPointer, to packet: [UInt8], header: RTPHeader,
                                       extraCapacity: Int = 0) -> [UInt8]? {
        guard id != 0, header.payloadRange.upperBound <= packet.count else { return nil }
        guard let profile = header.extensionProfile else {
            return addingBlock(id: id, data: data, to: packet, header: header, extraCapacity: extraCapacity)
        }
        guard let form = RTPHeaderExtensionForm(profile: profile),
              let elementLength = elementLength(id: id, count: data.count, form: form)
        else { return nil }
        let block = header.extensionRange
        guard block.lowerBound >= RTPHeader.fixedLength + 4, block.upperBound <= packet.count else { return nil }
        let bodyLength = (block.count + elementLength + 3) / 4 * 4
        guard bodyLength / 4 <= Int(UInt16.max) else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(packet.count - block.count + bodyLength + max(extraCapacity, 0))
        out.append(contentsOf: packet[..<block.lowerBound])
        out[block.lowerBound - 2] = UInt8((bodyLength / 4) >> 8)
        out[block.lowerBound - 1] = UInt8(truncatingIfNeeded: bodyLength / 4)
        out.append(contentsOf: packet[block])
        appendElement(id: id, data: data, form: form, to: &out)
        out.append(contentsOf: repeatElement(0, count: bodyLength - block.count - elementLength))
        out.append(contentsOf: packet[block.upperBound...])
        return out
    }

    /// A new extension block holding the element, inserted after the CSRC list; sets X.
    private static func addingBlock(id: UInt8, data: UnsafeRawBufferPointer, to packet: [UInt8], header: RTPHeader,
                                    extraCapacity: Int) -> [UInt8]? {
        let form: RTPHeaderExtensionForm = id <= 14 && (1...16).contains(data.count) ? .oneByte : .twoByte(appBits: 0)
        guard let elementLength = elementLength(id: id, count: data.count, form: form) else { return nil }
        let bodyLength = (elementLength + 3) / 4 * 4
        let csrcEnd = header.csrcRange.upperBound
        guard csrcEnd <= packet.count, !packet.isEmpty else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(packet.count + 4 + bodyLength + max(extraCapacity, 0))
        out.append(contentsOf: packet[..<csrcEnd])
        out[0] |= 0x10
        out.append(UInt8(form.profile >> 8))
        out.append(UInt8(truncatingIfNeeded: form.profile))
        out.append(UInt8((bodyLength / 4) >> 8))
        out.append(UInt8(truncatingIfNeeded: bodyLength / 4))
        appendElement(id: id, data: data, form: form, to: &out)
        out.append(contentsOf: repeatElement(0, count: bodyLength - elementLength))
        out.append(contentsOf: packet[csrcEnd...])
        return out
    }

    /// The length of one element of `count` data bytes in `form`, nil when the form cannot carry it.
    private static func elementLength(id: UInt8, count: Int, form: RTPHeaderExtensionForm) -> Int? {
        switch form {
        case .oneByte:
            guard (1...14).contains(id), (1...16).contains(count) else { return nil }
            return 1 + count
        case .twoByte:
            guard count <= 255 else { return nil }
            return 2 + count
        }
    }

    /// Appends one element (checked by `elementLength` first).
    private static func appendElement(id: UInt8, data: UnsafeRawBufferPointer, form: RTPHeaderExtensionForm,
                                      to out: inout [UInt8]) {
        switch form {
        case .oneByte: out.append(id << 4 | UInt8(data.count - 1))
        case .twoByte:
            out.append(id)
            out.append(UInt8(data.count))
        }
        out.append(contentsOf: data)
    }
}
