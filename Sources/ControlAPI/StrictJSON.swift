/// A strict RFC 8259 validator for uploaded JSON that is stored verbatim and later spliced into
/// responses. Foundation's parsers are lenient (trailing commas, a byte-order mark), and one
/// lenient body stored once would make every later listing of that call invalid JSON, so the
/// gate is this grammar, not a parser's tolerance. Depth is bounded: deep input is refused
/// rather than overflowing the stack.
struct StrictJSON {
    enum Outcome: Equatable {
        case object, notAnObject, invalid
    }

    static let maxDepth = 256

    /// Whether `bytes` is exactly one JSON text, and whether that text is an object.
    static func classify(_ bytes: [UInt8]) -> Outcome {
        var parser = StrictJSON(bytes: bytes)
        parser.skipWhitespace()
        let isObject = parser.peek == UInt8(ascii: "{")
        guard parser.value(depth: 0) else { return .invalid }
        parser.skipWhitespace()
        guard parser.index == bytes.count else { return .invalid }
        return isObject ? .object : .notAnObject
    }

    private let bytes: [UInt8]
    private var index = 0

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    private var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = peek, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    private mutating func consume(_ byte: UInt8) -> Bool {
        guard peek == byte else { return false }
        index += 1
        return true
    }

    private mutating func literal(_ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        let matches = text.withUTF8Buffer { Array($0) == Array(bytes[index..<index + count]) }
        if matches { index += count }
        return matches
    }

    private mutating func value(depth: Int) -> Bool {
        guard depth < Self.maxDepth, let byte = peek else { return false }
        switch byte {
        case UInt8(ascii: "{"): return object(depth: depth + 1)
        case UInt8(ascii: "["): return array(depth: depth + 1)
        case UInt8(ascii: "\""): return string()
        case UInt8(ascii: "t"): return literal("true")
        case UInt8(ascii: "f"): return literal("false")
        case UInt8(ascii: "n"): return literal("null")
        default: return number()
        }
    }

    private mutating func object(depth: Int) -> Bool {
        index += 1
        skipWhitespace()
        if consume(UInt8(ascii: "}")) { return true }
        while true {
            skipWhitespace()
            guard string() else { return false }
            skipWhitespace()
            guard consume(UInt8(ascii: ":")) else { return false }
            skipWhitespace()
            guard value(depth: depth) else { return false }
            skipWhitespace()
            if consume(UInt8(ascii: "}")) { return true }
            guard consume(UInt8(ascii: ",")) else { return false }
        }
    }

    private mutating func array(depth: Int) -> Bool {
        index += 1
        skipWhitespace()
        if consume(UInt8(ascii: "]")) { return true }
        while true {
            skipWhitespace()
            guard value(depth: depth) else { return false }
            skipWhitespace()
            if consume(UInt8(ascii: "]")) { return true }
            guard consume(UInt8(ascii: ",")) else { return false }
        }
    }

    private mutating func string() -> Bool {
        guard consume(UInt8(ascii: "\"")) else { return false }
        while let byte = peek {
            index += 1
            switch byte {
            case UInt8(ascii: "\""): return true
            case UInt8(ascii: "\\"): guard escape() else { return false }
            case 0..<0x20: return false
            default: continue
            }
        }
        return false
    }

    private mutating func escape() -> Bool {
        guard let byte = peek else { return false }
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
            UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return true
        case UInt8(ascii: "u"):
            for _ in 0..<4 {
                guard let hex = peek, hex.isHexDigit else { return false }
                index += 1
            }
            return true
        default:
            return false
        }
    }

    private mutating func number() -> Bool {
        _ = consume(UInt8(ascii: "-"))
        if consume(UInt8(ascii: "0")) {
            // No leading zeros.
        } else {
            guard digits() else { return false }
        }
        if consume(UInt8(ascii: ".")) { guard digits() else { return false } }
        if consume(UInt8(ascii: "e")) || consume(UInt8(ascii: "E")) {
            if !consume(UInt8(ascii: "+")) { _ = consume(UInt8(ascii: "-")) }
            guard digits() else { return false }
        }
        return true
    }

    /// One or more decimal digits.
    private mutating func digits() -> Bool {
        let start = index
        while let byte = peek, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { index += 1 }
        return index > start
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}
