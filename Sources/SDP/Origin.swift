/// The `o=<username> <sess-id> <sess-version> <nettype> <addrtype> <unicast-address>` line
/// (RFC 8866 §5.2): who made the description and its version. Chorus does not interpret the
/// peer's origin; for its own answer it writes `- <session id> <version> IN IP4 127.0.0.1` as
/// JSEP (RFC 8829 §5.2.1) suggests, since the address is meaningless there.
public struct Origin: Sendable, Hashable {
    public var username: String
    /// Decimal digits; kept as text because RFC 8866 does not bound its length.
    public var sessionID: String
    public var sessionVersion: String
    public var networkType: String
    public var addressType: String
    public var unicastAddress: String

    public init(username: String, sessionID: String, sessionVersion: String,
                networkType: String = "IN", addressType: String = "IP4", unicastAddress: String = "127.0.0.1") {
        self.username = username
        self.sessionID = sessionID
        self.sessionVersion = sessionVersion
        self.networkType = networkType
        self.addressType = addressType
        self.unicastAddress = unicastAddress
    }

    /// Parses the six fields; nil when there are not exactly six visible fields.
    public init?(parsing value: String) {
        let parts = SDPSyntax.fields(value)
        guard parts.count == 6, parts.allSatisfy(SDPSyntax.isVisible) else { return nil }
        self.init(username: parts[0], sessionID: parts[1], sessionVersion: parts[2],
                  networkType: parts[3], addressType: parts[4], unicastAddress: parts[5])
    }

    /// The line value after `o=`.
    public var value: String {
        [username, sessionID, sessionVersion, networkType, addressType, unicastAddress].joined(separator: " ")
    }
}
