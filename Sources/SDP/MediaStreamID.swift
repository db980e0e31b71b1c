/// The `a=msid:<stream id> [<track id>]` attribute (RFC 8830 §2): which MediaStream, and which
/// track in it, an m= section's outgoing media belongs to. The browser groups received tracks
/// into streams by it; `-` as stream ID means "no stream".
public struct MediaStreamID: Sendable, Hashable {
    public var streamID: String
    /// The "appdata" part: the track ID in browsers; nil when absent.
    public var trackID: String?

    public init(streamID: String, trackID: String? = nil) {
        self.streamID = streamID
        self.trackID = trackID
    }

    /// Parses `{stream} {track}` (Firefox braces its UUIDs) or a lone stream ID.
    public init?(parsing value: String) {
        let parts = SDPSyntax.fields(value)
        guard (1...2).contains(parts.count), parts.allSatisfy(SDPSyntax.isVisible) else { return nil }
        self.init(streamID: parts[0], trackID: parts.count == 2 ? parts[1] : nil)
    }

    /// The attribute value, e.g. `stream track`.
    public var value: String { trackID.map { streamID + " " + $0 } ?? streamID }
}
