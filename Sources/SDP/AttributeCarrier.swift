/// Something that holds SDP attribute lines: the session and each media section. The reads
/// both levels share live here once; each returns the first match, nil when absent (a media
/// section's nil means the session level applies).
public protocol AttributeCarrier {
    var attributes: [Attribute] { get }
}

extension AttributeCarrier {
    /// The direction attribute (`a=sendrecv` …); Firefox also writes one at session level.
    public var direction: Direction? {
        for case .direction(let direction) in attributes { return direction }
        return nil
    }

    /// `a=setup` (RFC 4145): which side starts DTLS.
    public var setup: Setup? {
        for case .setup(let setup) in attributes { return setup }
        return nil
    }

    public var iceUfrag: String? {
        for case .iceUfrag(let ufrag) in attributes { return ufrag }
        return nil
    }

    public var icePwd: String? {
        for case .icePwd(let pwd) in attributes { return pwd }
        return nil
    }
}

extension SessionDescription: AttributeCarrier {}
extension MediaDescription: AttributeCarrier {}
