/// The line parser behind `SessionDescription(parsing:)`: one pass over the bytes, one line at
/// a time, session lines first and then one `MediaDescription` per `m=` line.
///
/// Why bytes: splitting at LF and stripping one CR is exact on bytes, whereas Swift treats
/// CRLF as a single `Character`. Every index it uses comes from `firstIndex` or a checked
/// bound, so no input can trap it; the first violation throws `malformed` with the line number.
struct SDPParser {
    private var sawVersion = false
    private var origin: Origin?
    private var sessionName: String?
    private var timing: Timing?
    private var connection: ConnectionData?
    private var attributes: [Attribute] = []
    private var media: [MediaDescription] = []
    private var current: MediaDescription?

    mutating func parse(_ bytes: [UInt8]) throws(SDPOfferError) -> SessionDescription {
        var lineNumber = 0
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.endIndex
            lineNumber += 1
            var lineEnd = end
            if lineEnd > start, bytes[lineEnd - 1] == 0x0D { lineEnd -= 1 }
            try handle(bytes[start..<lineEnd], number: lineNumber)
            start = end < bytes.endIndex ? end + 1 : end
        }
        return try finish(lastLine: max(lineNumber, 1))
    }

    private mutating func handle(_ line: ArraySlice<UInt8>, number: Int) throws(SDPOfferError) {
        // Blank lines are tolerated: some signalling code appends or doubles line endings.
        guard !line.isEmpty else { return }
        if line.contains(0x00) || line.contains(0x0D) {
            throw .malformed(line: number, reason: "contains a NUL or bare CR character")
        }
        let type = line[line.startIndex]
        guard line.count >= 2, line[line.startIndex + 1] == UInt8(ascii: "="), Self.isLetter(type) else {
            throw .malformed(line: number, reason: "expected <type>=<value>")
        }
        guard sawVersion else {
            guard type == UInt8(ascii: "v"), line.dropFirst(2).elementsEqual([UInt8(ascii: "0")]) else {
                throw .malformed(line: number, reason: "the first line must be v=0")
            }
            sawVersion = true
            return
        }
        let value = line.dropFirst(2)
        switch type {
        case UInt8(ascii: "a"): try handleAttribute(value, number: number)
        case UInt8(ascii: "v"): throw .malformed(line: number, reason: "repeated v= line")
        case UInt8(ascii: "o"), UInt8(ascii: "s"), UInt8(ascii: "t"):
            try handleSessionLine(type, String(decoding: value, as: UTF8.self), number: number)
        case UInt8(ascii: "c"): try handleConnection(String(decoding: value, as: UTF8.self), number: number)
        case UInt8(ascii: "m"): try handleMedia(String(decoding: value, as: UTF8.self), number: number)
        default: return  // i= u= e= p= b= r= z= k= and unknown types carry nothing Chorus uses.
        }
    }

    private mutating func handleSessionLine(_ type: UInt8, _ value: String, number: Int) throws(SDPOfferError) {
        guard current == nil else {
            throw .malformed(line: number, reason: "o=, s= and t= belong before the first m= line")
        }
        switch type {
        case UInt8(ascii: "o"):
            guard origin == nil else { throw .malformed(line: number, reason: "repeated o= line") }
            guard let parsed = Origin(parsing: value) else {
                throw .malformed(line: number, reason: "o= needs six fields")
            }
            origin = parsed
        case UInt8(ascii: "s"):
            guard sessionName == nil else { throw .malformed(line: number, reason: "repeated s= line") }
            sessionName = value
        default:
            guard let parsed = Timing(parsing: value) else {
                throw .malformed(line: number, reason: "t= needs two decimal times")
            }
            if timing == nil { timing = parsed }
        }
    }

    private mutating func handleConnection(_ value: String, number: Int) throws(SDPOfferError) {
        guard let parsed = ConnectionData(parsing: value) else {
            throw .malformed(line: number, reason: "c= needs <nettype> <addrtype> <address>")
        }
        if current != nil { current?.connection = parsed } else { connection = parsed }
    }

    private mutating func handleMedia(_ value: String, number: Int) throws(SDPOfferError) {
        let parts = SDPSyntax.fields(value)
        guard parts.count >= 4, SDPSyntax.isToken(parts[0]), SDPSyntax.isVisible(parts[2]) else {
            throw .malformed(line: number, reason: "m= needs <media> <port> <proto> <fmt> …")
        }
        let portParts = SDPSyntax.split(parts[1], at: UInt8(ascii: "/"))
        guard portParts.count <= 2, let port = SDPSyntax.decimal(portParts[0], as: UInt16.self) else {
            throw .malformed(line: number, reason: "m= port is not a number from 0 to 65535")
        }
        var count: UInt16?
        if portParts.count == 2 {
            guard let parsed = SDPSyntax.decimal(portParts[1], as: UInt16.self) else {
                throw .malformed(line: number, reason: "m= port count is not a number")
            }
            count = parsed
        }
        let formats = Array(parts[3...])
        let rtp = MediaDescription.isRTPProto(parts[2])
        for format in formats where rtp ? SDPSyntax.payloadType(format) == nil : !SDPSyntax.isVisible(format) {
            throw .malformed(line: number, reason: "m= format \(format) is not an RTP payload type (0-127)")
        }
        if let current { media.append(current) }
        current = MediaDescription(media: parts[0], port: port, numberOfPorts: count, proto: parts[2],
                                   formats: formats)
    }

    private mutating func handleAttribute(_ bytes: ArraySlice<UInt8>, number: Int) throws(SDPOfferError) {
        let colon = bytes.firstIndex(of: UInt8(ascii: ":"))
        let name = String(decoding: bytes[..<(colon ?? bytes.endIndex)], as: UTF8.self)
        guard SDPSyntax.isToken(name) else {
            throw .malformed(line: number, reason: "attribute name is not a token")
        }
        let value = colon.map { String(decoding: bytes[($0 + 1)...], as: UTF8.self) }
        guard let attribute = Attribute(name: name, value: value) else {
            throw .malformed(line: number, reason: "invalid a=\(name) value")
        }
        if current != nil { current?.attributes.append(attribute) } else { attributes.append(attribute) }
    }

    private mutating func finish(lastLine: Int) throws(SDPOfferError) -> SessionDescription {
        guard sawVersion else { throw .malformed(line: lastLine, reason: "empty description") }
        guard let origin else { throw .malformed(line: lastLine, reason: "no o= line") }
        guard let sessionName else { throw .malformed(line: lastLine, reason: "no s= line") }
        guard let timing else { throw .malformed(line: lastLine, reason: "no t= line") }
        if let current { media.append(current) }
        current = nil
        return SessionDescription(origin: origin, sessionName: sessionName, connection: connection,
                                  timing: timing, attributes: attributes, media: media)
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }
}
