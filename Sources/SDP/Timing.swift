/// The `t=<start-time> <stop-time>` line (RFC 8866 §5.9). WebRTC always writes `t=0 0`
/// (an unbounded session); Chorus keeps the values only to write them back.
public struct Timing: Sendable, Hashable {
    public var start: UInt64
    public var stop: UInt64

    public init(start: UInt64 = 0, stop: UInt64 = 0) {
        self.start = start
        self.stop = stop
    }

    /// Parses `0 0`; nil unless there are two decimal fields.
    public init?(parsing value: String) {
        let parts = SDPSyntax.fields(value)
        guard parts.count == 2, let start = SDPSyntax.decimal(parts[0], as: UInt64.self),
              let stop = SDPSyntax.decimal(parts[1], as: UInt64.self)
        else { return nil }
        self.init(start: start, stop: stop)
    }

    /// The line value after `t=`.
    public var value: String { "\(start) \(stop)" }
}
