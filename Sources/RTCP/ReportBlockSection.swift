/// The tail SR and RR share (RFC 3550 §6.4.1–6.4.2): `count` report blocks followed by an
/// optional profile-specific extension. Parsed and checked here once for both.
enum ReportBlockSection {
    /// Splits `rest` (the body after the sender part) into its blocks and extension.
    static func parse(_ rest: ArraySlice<UInt8>, count: Int) throws(RTCPParseError)
        -> (blocks: RTCPItemList<ReportBlock>, profileExtension: ArraySlice<UInt8>)
    {
        guard let blocks = RTCPItemList<ReportBlock>.parse(rest, count: count) else { throw .malformedBody }
        return (blocks, rest.bytes(at: blocks.bytes.count, count: rest.count - blocks.bytes.count))
    }

    /// Throws when the section cannot be written: too many blocks or an unaligned extension.
    static func validate(_ blocks: RTCPItemList<ReportBlock>, _ profileExtension: ArraySlice<UInt8>, limit: Int)
        throws(RTCPSerializationError)
    {
        guard blocks.count <= limit else { throw .tooManyItems(count: blocks.count, limit: limit) }
        guard profileExtension.count % 4 == 0 else { throw .notWordAligned(profileExtension.count) }
    }
}
