/// The `c=<nettype> <addrtype> <connection-address>` line (RFC 8866 §5.7), at session or media
/// level. With ICE it carries the default candidate's address, or `IN IP4 0.0.0.0` before
/// gathering; Chorus reads candidates instead and writes its own host address here.
public struct ConnectionData: Sendable, Hashable {
    public var networkType: String
    /// `IP4` or `IP6`.
    public var addressType: String
    /// The address, possibly with a multicast `/ttl` suffix (kept verbatim).
    public var address: String

    public init(networkType: String = "IN", addressType: String, address: String) {
        self.networkType = networkType
        self.addressType = addressType
        self.address = address
    }

    /// Parses `IN IP4 192.0.2.10`; nil when there are not exactly three visible fields.
    public init?(parsing value: String) {
        let parts = SDPSyntax.fields(value)
        guard parts.count == 3, parts.allSatisfy(SDPSyntax.isVisible) else { return nil }
        self.init(networkType: parts[0], addressType: parts[1], address: parts[2])
    }

    /// The line value after `c=`.
    public var value: String { "\(networkType) \(addressType) \(address)" }
}
