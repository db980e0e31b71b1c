import Foundation

/// A value read from YAML or JSON, for tests that check documents against each other.
public indirect enum DocumentValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([DocumentValue])
    case object([String: DocumentValue])

    public subscript(key: String) -> DocumentValue? {
        if case .object(let fields) = self { return fields[key] }
        return nil
    }

    public var string: String? { if case .string(let value) = self { value } else { nil } }
    public var array: [DocumentValue]? { if case .array(let value) = self { value } else { nil } }
    public var object: [String: DocumentValue]? { if case .object(let value) = self { value } else { nil } }

    /// A JSON document.
    public init(json: Data) throws {
        self = try JSONDecoder().decode(DocumentValue.self, from: json)
    }
}

extension DocumentValue: Decodable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([DocumentValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: DocumentValue].self))
        }
    }
}

/// Reads the subset of YAML the project's OpenAPI document is written in: block mappings and
/// sequences by indentation, one-line flow mappings and sequences, plain and quoted scalars,
/// literal and folded block scalars (`|`, `>`), comments. Enough to check the served document
/// against the server's own types in tests; anything else is an error naming the line.
public struct YAMLSubset {
    public struct ParseError: Error, CustomStringConvertible {
        public let line: Int
        public let message: String
        public var description: String { "line \(line): \(message)" }
    }

    private struct Line {
        let number: Int
        let indent: Int
        let text: Substring
    }

    private var lines: [Line]
    private let raw: [Substring]
    private var position = 0

    public static func parse(_ text: String) throws -> DocumentValue {
        var reader = YAMLSubset(text)
        return try reader.block(indent: 0)
    }

    private init(_ text: String) {
        raw = text.split(separator: "\n", omittingEmptySubsequences: false)
        lines = raw.enumerated().compactMap { index, line in
            let trimmed = line.drop { $0 == " " }
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { return nil }
            return Line(number: index + 1, indent: line.count - trimmed.count, text: trimmed)
        }
    }

    /// The block starting at the current line, whose lines are indented `indent` or more.
    private mutating func block(indent: Int) throws -> DocumentValue {
        guard position < lines.count, lines[position].indent >= indent else { return .null }
        let first = lines[position]
        if first.text.hasPrefix("{") || first.text.hasPrefix("[") {
            position += 1
            return try value(Self.stripComment(first.text).trimmingCharacters(in: .whitespaces), line: first, indent: first.indent)
        }
        return lines[position].text.hasPrefix("- ") || lines[position].text == "-"
            ? try sequence(indent: lines[position].indent) : try mapping(indent: lines[position].indent)
    }

    private mutating func mapping(indent: Int) throws -> DocumentValue {
        var fields: [String: DocumentValue] = [:]
        while position < lines.count, lines[position].indent == indent, !lines[position].text.hasPrefix("- ") {
            let line = lines[position]
            guard let colon = Self.keyColon(in: line.text) else { throw ParseError(line: line.number, message: "no key") }
            let key = Self.scalar(String(line.text[..<colon]).trimmingCharacters(in: .whitespaces))
            let rest = Self.stripComment(line.text[line.text.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            position += 1
            fields[key.string ?? "\(key)"] = try value(rest, line: line, indent: indent)
        }
        return .object(fields)
    }

    private mutating func sequence(indent: Int) throws -> DocumentValue {
        var items: [DocumentValue] = []
        while position < lines.count, lines[position].indent == indent, lines[position].text.hasPrefix("-") {
            let line = lines[position]
            let rest = line.text.dropFirst().drop { $0 == " " }
            if rest.isEmpty {
                position += 1
                items.append(try block(indent: indent + 1))
            } else if !rest.hasPrefix("{"), !rest.hasPrefix("\""), Self.keyColon(in: rest) != nil {
                // "- key: value" starts a mapping indented where the key is.
                lines[position] = Line(number: line.number, indent: indent + (line.text.count - rest.count), text: rest)
                items.append(try mapping(indent: indent + (line.text.count - rest.count)))
            } else {
                position += 1
                items.append(try value(Self.stripComment(rest).trimmingCharacters(in: .whitespaces), line: line, indent: indent))
            }
        }
        return .array(items)
    }

    private mutating func value(_ rest: String, line: Line, indent: Int) throws -> DocumentValue {
        if rest.isEmpty { return try block(indent: indent + 1) }
        if rest.hasPrefix("|") || rest.hasPrefix(">") { return .string(blockScalar(folded: rest.hasPrefix(">"), after: line)) }
        if rest.hasPrefix("{") || rest.hasPrefix("[") {
            // A flow collection may go on over the next lines until its brackets close.
            var text = rest
            while Self.openBrackets(text) > 0, position < lines.count {
                text += " " + Self.stripComment(lines[position].text)
                position += 1
            }
            var flow = FlowReader(text: Array(text), line: line.number)
            return try flow.value()
        }
        return Self.scalar(rest)
    }

    /// The lines of a `|` or `>` scalar: every raw line after `line` more indented than it
    /// (blank lines kept), the common indentation removed.
    private mutating func blockScalar(folded: Bool, after line: Line) -> String {
        var body: [Substring] = []
        var index = line.number  // raw index of the next line
        while index < raw.count {
            let text = raw[index]
            let indent = text.prefix { $0 == " " }.count
            if !text.trimmingCharacters(in: .whitespaces).isEmpty, indent <= line.indent { break }
            body.append(text)
            index += 1
        }
        while position < lines.count, lines[position].number <= index { position += 1 }
        let common = body.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
            .map { $0.prefix { $0 == " " }.count }.min() ?? 0
        let stripped = body.map { String($0.dropFirst(min(common, $0.count))) }
        return stripped.joined(separator: folded ? " " : "\n").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The colon that ends a mapping key (outside quotes, followed by a space or the end).
    static func keyColon(in text: Substring) -> Substring.Index? {
        var quote: Character?
        var previous: Character = " "
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            defer { previous = character }
            if let open = quote {
                if character == open { quote = nil }
            } else if startsQuote(character, after: previous) {
                quote = character
            } else if character == ":" {
                let next = text.index(after: index)
                if next == text.endIndex || text[next] == " " { return index }
            } else if index == text.startIndex, character == "{" || character == "[" {
                return nil  // a flow collection, not a key
            }
            index = text.index(after: index)
        }
        return nil
    }

    /// Brackets opened and not closed in `text`, outside quotes.
    static func openBrackets(_ text: String) -> Int {
        var depth = 0
        var quote: Character?
        var previous: Character = " "
        for character in text {
            if let open = quote {
                if character == open { quote = nil }
            } else if startsQuote(character, after: previous) {
                quote = character
            } else if character == "{" || character == "[" {
                depth += 1
            } else if character == "}" || character == "]" {
                depth -= 1
            }
            if character != " " { previous = character }
        }
        return depth
    }

    /// A quote opens a quoted scalar only where a scalar starts (an apostrophe inside plain
    /// text, as in "the room's mix", is text).
    static func startsQuote(_ character: Character, after previous: Character) -> Bool {
        (character == "\"" || character == "'") && [" ", "{", "[", ",", ":"].contains(previous)
    }

    static func stripComment(_ text: Substring) -> Substring {
        var quote: Character?
        var previous: Character = " "
        for index in text.indices {
            let character = text[index]
            if let open = quote {
                if character == open { quote = nil }
            } else if startsQuote(character, after: previous) {
                quote = character
            } else if character == "#", previous == " " {
                return text[..<index]
            }
            previous = character
        }
        return text
    }

    /// A plain or quoted scalar.
    static func scalar(_ text: String) -> DocumentValue {
        if text.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") {
            return .string(String(text.dropFirst().dropLast()).replacingOccurrences(of: "\\\"", with: "\""))
        }
        if text.count >= 2, text.hasPrefix("'"), text.hasSuffix("'") {
            return .string(String(text.dropFirst().dropLast()).replacingOccurrences(of: "''", with: "'"))
        }
        switch text {
        case "null", "~": return .null
        case "true": return .bool(true)
        case "false": return .bool(false)
        default: return Double(text).map(DocumentValue.number) ?? .string(text)
        }
    }
}

/// A one-line flow collection: `{ a: b, c: [d, e] }`.
private struct FlowReader {
    let text: [Character]
    let line: Int
    var index = 0

    mutating func value() throws -> DocumentValue {
        skipSpaces()
        guard index < text.count else { throw YAMLSubset.ParseError(line: line, message: "flow value missing") }
        switch text[index] {
        case "{": return try collection(close: "}") { reader in
            let key = try reader.scalarText(stops: [":", ",", "}"])
            // A key without a colon has a null value (YAML's implicit null in flow context).
            guard reader.index < reader.text.count, reader.text[reader.index] == ":" else {
                return (YAMLSubset.scalar(key).string ?? key, .null)
            }
            reader.index += 1
            return (YAMLSubset.scalar(key).string ?? key, try reader.value())
        }
        case "[": return try collection(close: "]") { reader in (nil, try reader.value()) }
        default: return YAMLSubset.scalar(try scalarText(stops: [",", "}", "]"]))
        }
    }

    private mutating func collection(close: Character, _ item: (inout FlowReader) throws -> (String?, DocumentValue))
        throws -> DocumentValue
    {
        index += 1
        var fields: [String: DocumentValue] = [:]
        var items: [DocumentValue] = []
        while true {
            skipSpaces()
            guard index < text.count else { throw YAMLSubset.ParseError(line: line, message: "unclosed \(close)") }
            if text[index] == close {
                index += 1
                break
            }
            let (key, value) = try item(&self)
            if let key { fields[key] = value } else { items.append(value) }
            skipSpaces()
            if index < text.count, text[index] == "," { index += 1 }
        }
        return close == "}" ? .object(fields) : .array(items)
    }

    private mutating func scalarText(stops: Set<Character>) throws -> String {
        skipSpaces()
        var result = ""
        if index < text.count, text[index] == "\"" || text[index] == "'" {
            let quote = text[index]
            result.append(quote)
            index += 1
            while index < text.count, text[index] != quote {
                result.append(text[index])
                index += 1
            }
            result.append(quote)
            index += 1
            return result
        }
        while index < text.count, !stops.contains(text[index]) {
            result.append(text[index])
            index += 1
        }
        return result.trimmingCharacters(in: .whitespaces)
    }

    private mutating func skipSpaces() {
        while index < text.count, text[index] == " " { index += 1 }
    }
}
