import Foundation

/// A bad setting: which one (as the operator wrote it: `--http-port` or `CHORUS_HTTP_PORT`)
/// and what is wrong with its value. `chorus serve` prints it and exits before opening anything.
public struct ServeConfigurationError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The option or environment variable the bad value came from; for a value that nobody set
    /// (a default that does not fit, such as the host name as node ID), the option's name.
    public let setting: String
    public let problem: String

    public init(setting: String, problem: String) {
        self.setting = setting
        self.problem = problem
    }

    public var description: String { "\(setting): \(problem)" }
}

/// One setting's value and where it came from, so that a range check can name its source.
struct Setting<Value> {
    var value: Value
    /// `--name`, `CHORUS_NAME`, or the option's name for a default.
    var source: String

    /// The value when `isValid` holds; otherwise the error naming the source and `problem`.
    func checked(_ problem: String, _ isValid: (Value) -> Bool) throws(ServeConfigurationError) -> Value {
        guard isValid(value) else { throw ServeConfigurationError(setting: source, problem: "\(problem); got \(value)") }
        return value
    }
}

/// Resolves each setting the way every `chorus serve` option does: the option when given, else
/// the environment variable `CHORUS_<NAME>` (the option's name in capitals, `-` as `_`), else
/// the default. A variable that is set but cannot be read as the option's type is an error
/// naming the variable (it is never silently replaced by the default).
struct SettingReader {
    let environment: [String: String]

    /// The variable that stands in for `--name`: `CHORUS_HTTP_PORT` for `http-port`.
    static func variable(_ name: String) -> String {
        "CHORUS_" + name.uppercased().replacingOccurrences(of: "-", with: "_")
    }

    /// A setting given as words (`--outbound on`): the option's text or the variable's, read by
    /// `parse`, or `fallback` when neither is set.
    func value<Value>(_ given: String?, _ name: String, _ fallback: Value, expecting: String,
                      parse: (String) -> Value?) throws(ServeConfigurationError) -> Setting<Value> {
        guard let text = self.text(given, name) else { return Setting(value: fallback, source: "--" + name) }
        return try read(text, expecting: expecting, parse: parse)
    }

    /// A setting ArgumentParser already typed: the option's value, or the variable's read by
    /// `parse`; nil when neither is set.
    func optional<Value>(_ given: Value?, _ name: String, expecting: String,
                         parse: (String) -> Value?) throws(ServeConfigurationError) -> Setting<Value>? {
        if let given { return Setting(value: given, source: "--" + name) }
        guard let text = self.text(nil, name) else { return nil }
        return try read(text, expecting: expecting, parse: parse)
    }

    /// `text` (blanks around it aside) read by `parse`; text it refuses is an error naming its source.
    private func read<Value>(_ text: Setting<String>, expecting: String,
                             parse: (String) -> Value?) throws(ServeConfigurationError) -> Setting<Value> {
        guard let value = parse(text.value.trimmingCharacters(in: .whitespaces)) else {
            throw ServeConfigurationError(setting: text.source, problem: "\"\(text.value)\" is not \(expecting)")
        }
        return Setting(value: value, source: text.source)
    }

    /// A text setting (taken as written).
    func text(_ given: String?, _ name: String) -> Setting<String>? {
        if let given { return Setting(value: given, source: "--" + name) }
        let variable = Self.variable(name)
        return environment[variable].map { Setting(value: $0, source: variable) }
    }

    /// An integer setting.
    func integer(_ given: Int?, _ name: String) throws(ServeConfigurationError) -> Setting<Int>? {
        try optional(given, name, expecting: "a whole number") { Int($0) }
    }

    /// A number of seconds, a rate: any finite decimal number.
    func number(_ given: Double?, _ name: String) throws(ServeConfigurationError) -> Setting<Double>? {
        try optional(given, name, expecting: "a number") { Double($0).flatMap { $0.isFinite ? $0 : nil } }
    }

    /// A flag: on when given, else when its variable says so (1, true, yes or on; 0, false, no,
    /// off or empty say no).
    func flag(_ given: Bool, _ name: String) throws(ServeConfigurationError) -> Bool {
        if given { return true }
        return try optional(nil, name, expecting: "1 or 0 (or true, false, yes, no, on, off)") { text in
            switch text.lowercased() {
            case "1", "true", "yes", "on": true
            case "0", "false", "no", "off", "": false
            default: nil
            }
        }?.value ?? false
    }
}
