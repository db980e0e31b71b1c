/// The `a=simulcast:` attribute (RFC 8853 §5.1), e.g. `send h;m;l` or `send 1,~4;2;3 recv c`:
/// which RIDs form simulcast streams, per direction. `;` separates streams, `,` separates
/// alternative formats of one stream, and `~` marks a stream that starts paused.
///
/// Parsed from offers, where the camera's `send` list gives the order of its simulcast layers
/// (`CameraSection.simulcastLayers`, RFC 8853 §5.2: the order of the `a=rid` lines carries no
/// meaning), and written in answers as the mirrored `recv` list. The pre-RFC form
/// `send rid=h;m;l` that older browsers wrote is accepted as well.
public struct Simulcast: Sendable, Hashable {
    /// One RID reference inside a simulcast stream list.
    public struct Alternative: Sendable, Hashable {
        public var rid: String
        public var paused: Bool

        public init(rid: String, paused: Bool = false) {
            self.rid = rid
            self.paused = paused
        }
    }

    /// Streams the author sends; each stream lists its alternatives in preference order.
    public var send: [[Alternative]]
    /// Streams the author wants to receive.
    public var receive: [[Alternative]]

    public init(send: [[Alternative]] = [], receive: [[Alternative]] = []) {
        self.send = send
        self.receive = receive
    }

    /// Parses `send h;m;l [recv …]`; nil when a direction repeats or a RID is invalid.
    public init?(parsing value: String) {
        let parts = SDPSyntax.fields(value)
        guard parts.count == 2 || parts.count == 4 else { return nil }
        var send: [[Alternative]]?
        var receive: [[Alternative]]?
        var index = 0
        while index + 1 < parts.count {
            guard let streams = Self.streams(parts[index + 1]) else { return nil }
            switch parts[index] {
            case "send" where send == nil: send = streams
            case "recv" where receive == nil: receive = streams
            default: return nil
            }
            index += 2
        }
        self.init(send: send ?? [], receive: receive ?? [])
    }

    /// The attribute value, e.g. `send h;m;l`.
    public var value: String {
        var pieces: [String] = []
        if !send.isEmpty { pieces += ["send", Self.text(of: send)] }
        if !receive.isEmpty { pieces += ["recv", Self.text(of: receive)] }
        return pieces.joined(separator: " ")
    }

    private static func streams(_ text: String) -> [[Alternative]]? {
        let list = text.hasPrefix("rid=") ? String(text.dropFirst(4)) : text
        var streams: [[Alternative]] = []
        for stream in SDPSyntax.split(list, at: UInt8(ascii: ";")) {
            var alternatives: [Alternative] = []
            for item in SDPSyntax.split(stream, at: UInt8(ascii: ",")) {
                let paused = item.hasPrefix("~")
                let rid = paused ? String(item.dropFirst()) : item
                guard RID.isValidID(rid) else { return nil }
                alternatives.append(Alternative(rid: rid, paused: paused))
            }
            streams.append(alternatives)
        }
        return streams
    }

    private static func text(of streams: [[Alternative]]) -> String {
        streams.map { stream in
            stream.map { ($0.paused ? "~" : "") + $0.rid }.joined(separator: ",")
        }.joined(separator: ";")
    }
}
