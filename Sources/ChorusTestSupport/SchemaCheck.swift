import Foundation

/// Checks a JSON value against a schema of an OpenAPI 3.1 document (JSON Schema's keywords the
/// project's document uses: `$ref` to components, `oneOf`, `type` (one or several), `const`,
/// `enum`, `required`, `properties`, `additionalProperties`, `items`, `minimum`, `maximum`,
/// `pattern`; descriptions and formats are ignored). Returns the problems found, each with the
/// path of the value: an empty list means the value conforms. For tests that hold the server's
/// output to its published schema.
public struct SchemaCheck {
    public let document: DocumentValue

    public init(document: DocumentValue) {
        self.document = document
    }

    /// `#/components/schemas/Name` → the schema.
    public func resolve(_ reference: String) -> DocumentValue? {
        var node: DocumentValue? = document
        for part in reference.dropFirst(2).split(separator: "/") { node = node?[String(part)] }
        return node
    }

    public func problems(_ value: DocumentValue, schema: DocumentValue, path: String = "$") -> [String] {
        if let reference = schema["$ref"]?.string {
            guard let target = resolve(reference) else { return ["\(path): unknown \(reference)"] }
            return problems(value, schema: target, path: path)
        }
        if let choices = schema["oneOf"]?.array {
            let matching = choices.filter { problems(value, schema: $0, path: path).isEmpty }.count
            return matching == 1 ? [] : ["\(path): matches \(matching) of oneOf's \(choices.count) schemas"]
        }
        var found: [String] = []
        if let type = schema["type"], !Self.has(value, type: type) { found.append("\(path): not of type \(type)") }
        if let constant = schema["const"], constant != value { found.append("\(path): not \(constant)") }
        if let options = schema["enum"]?.array, !options.contains(value) { found.append("\(path): \(value) not in enum") }
        if case .number(let number) = value {
            if case .number(let minimum)? = schema["minimum"], number < minimum { found.append("\(path): below \(minimum)") }
            if case .number(let maximum)? = schema["maximum"], number > maximum { found.append("\(path): above \(maximum)") }
        }
        if case .string(let text) = value, let pattern = schema["pattern"]?.string,
           text.range(of: pattern, options: .regularExpression) == nil {
            found.append("\(path): \"\(text)\" does not match \(pattern)")
        }
        if case .object(let fields) = value { found += objectProblems(fields, schema: schema, path: path) }
        if case .array(let items) = value, let itemSchema = schema["items"] {
            for (index, item) in items.enumerated() { found += problems(item, schema: itemSchema, path: "\(path)[\(index)]") }
        }
        return found
    }

    private func objectProblems(_ fields: [String: DocumentValue], schema: DocumentValue, path: String) -> [String] {
        var found: [String] = []
        for key in schema["required"]?.array?.compactMap(\.string) ?? [] where fields[key] == nil {
            found.append("\(path): \(key) missing")
        }
        let properties = schema["properties"]?.object ?? [:]
        for (key, field) in fields.sorted(by: { $0.key < $1.key }) {
            if let property = properties[key] {
                found += problems(field, schema: property, path: "\(path).\(key)")
            } else if schema["additionalProperties"] == .bool(false) {
                found.append("\(path): \(key) is not in the schema")
            } else if let extra = schema["additionalProperties"], extra.object != nil {
                found += problems(field, schema: extra, path: "\(path).\(key)")
            }
        }
        return found
    }

    /// Whether `value` is of the JSON Schema type (or one of the types) named.
    static func has(_ value: DocumentValue, type: DocumentValue) -> Bool {
        if let types = type.array { return types.contains { has(value, type: $0) } }
        switch (type.string, value) {
        case ("object", .object), ("array", .array), ("string", .string), ("boolean", .bool), ("null", .null),
             ("number", .number):
            return true
        case ("integer", .number(let number)):
            return number.rounded() == number
        default:
            return false
        }
    }
}
