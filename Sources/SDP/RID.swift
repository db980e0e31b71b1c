import ChorusCore

/// The `a=rid:<rid-id> <send|recv> [<restrictions>]` attribute (RFC 8851 §4): names one RTP
/// stream (a simulcast encoding) of an m= section, optionally restricting its payload types
/// (`pt=`) and resolution. Browsers write one `a=rid:<id> send` per `sendEncodings` entry, in
/// that order, with no restrictions (`a=rid:h send`, `a=rid:m send`, `a=rid:l send`).
///
/// The RIDs that the camera's `a=simulcast:send` names become its simulcast layers
/// (`CameraSection.simulcastLayers`); the answer mirrors each as `a=rid:<id> recv`, without
/// restrictions. Of the restrictions only `pt=` is checked (`payloadTypes`); the others
/// (resolution, frame rate, bitrate) are the sender's business and are ignored.
public struct RID: Sendable, Hashable {
    /// Whether the author sends (`send`) or wants to receive (`recv`) the named stream.
    public enum Direction: String, Sendable, Hashable {
        case send
        case recv
    }

    /// 1–255 alphanumeric characters, `-` or `_` (RFC 8851 §10, rid-syntax).
    public var id: String
    public var direction: Direction
    /// The restriction list after the direction (`pt=96;max-width=1280`), verbatim; nil if none.
    public var restrictions: String?

    public init(id: String, direction: Direction, restrictions: String? = nil) {
        self.id = id
        self.direction = direction
        self.restrictions = restrictions
    }

    /// Parses `h send` or `h send max-width=1280`; nil when the ID or direction is invalid.
    public init?(parsing value: String) {
        let parts = SDPSyntax.fields(value)
        guard parts.count >= 2, Self.isValidID(parts[0]), let direction = Direction(rawValue: parts[1])
        else { return nil }
        let restrictions = parts.count > 2 ? parts[2...].joined(separator: " ") : nil
        self.init(id: parts[0], direction: direction, restrictions: restrictions)
    }

    /// The attribute value, e.g. `h send`.
    public var value: String {
        let head = id + " " + direction.rawValue
        return restrictions.map { head + " " + $0 } ?? head
    }

    /// The `pt=` restriction (RFC 8851 §5, `rid-fmt-list`: `pt=96,97`): the payload types the
    /// stream may use; nil when the stream is not restricted by payload type. Formats that are
    /// not payload types are left out, so a list of only those restricts to nothing.
    public var payloadTypes: [PayloadType]? {
        guard let restrictions else { return nil }
        for parameter in SDPSyntax.split(restrictions, at: UInt8(ascii: ";")) {
            guard let (key, list) = SDPSyntax.splitOnce(parameter, at: UInt8(ascii: "=")),
                  SDPSyntax.trimmed(key) == "pt"
            else { continue }
            return SDPSyntax.split(list, at: UInt8(ascii: ",")).compactMap { SDPSyntax.payloadType(SDPSyntax.trimmed($0)) }
        }
        return nil
    }

    /// RFC 8851 rid-id: 1*255 of ALPHA / DIGIT / "-" / "_".
    static func isValidID(_ text: String) -> Bool {
        let bytes = text.utf8
        return (1...255).contains(bytes.count) && bytes.allSatisfy { byte in
            switch byte {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x5F: return true
            default: return false
            }
        }
    }
}
