/// The `a=candidate` attribute (RFC 8839 §5.1): one ICE transport address of the peer.
///
/// An ICE-lite server never sends connectivity checks, so it needs peer candidates only for
/// diagnostics; the fields up to the type are parsed and the extension fields (`raddr`,
/// `rport`, `tcptype`, `generation`, `network-id`, …) are kept verbatim. The server's own host
/// candidate is built with `init(foundation:…)` and written with `value`.
public struct Candidate: Sendable, Hashable {
    public var foundation: String
    /// 1 = RTP, 2 = RTCP (never used with rtcp-mux, but Firefox still lists it).
    public var component: UInt16
    /// `udp` or `tcp` as written (case varies: Firefox writes `UDP`).
    public var transport: String
    public var priority: UInt32
    /// An IP literal or an mDNS name such as `host-1.invalid`.
    public var address: String
    public var port: UInt16
    /// `host`, `srflx`, `prflx` or `relay`.
    public var type: String
    /// The fields after `typ <type>`, verbatim.
    public var extensionFields: [String]

    public init(foundation: String, component: UInt16, transport: String, priority: UInt32,
                address: String, port: UInt16, type: String, extensionFields: [String] = []) {
        self.foundation = foundation
        self.component = component
        self.transport = transport
        self.priority = priority
        self.address = address
        self.port = port
        self.type = type
        self.extensionFields = extensionFields
    }

    /// Parses `2481484778 1 udp 2122194687 192.0.2.10 49709 typ host generation 0`; nil when a
    /// mandatory field is missing or out of range.
    public init?(parsing value: String) {
        let parts = SDPSyntax.fields(value)
        guard parts.count >= 8, parts[6] == "typ",
              SDPSyntax.isVisible(parts[0]), parts[0].utf8.count <= 32,
              let component = SDPSyntax.decimal(parts[1], as: UInt16.self), (1...256).contains(component),
              SDPSyntax.isToken(parts[2]),
              let priority = SDPSyntax.decimal(parts[3], as: UInt32.self),
              SDPSyntax.isVisible(parts[4]),
              let port = SDPSyntax.decimal(parts[5], as: UInt16.self),
              SDPSyntax.isToken(parts[7])
        else { return nil }
        self.init(foundation: parts[0], component: component, transport: parts[2], priority: priority,
                  address: parts[4], port: port, type: parts[7], extensionFields: Array(parts[8...]))
    }

    /// The attribute value, e.g. `1 1 udp 2130706431 192.0.2.1 3478 typ host`.
    public var value: String {
        let head = "\(foundation) \(component) \(transport) \(priority) \(address) \(port) typ \(type)"
        return extensionFields.isEmpty ? head : head + " " + extensionFields.joined(separator: " ")
    }

    /// The `tcptype` extension (RFC 6544), nil for UDP candidates.
    public var tcpType: String? { extensionValue("tcptype") }

    /// The value following the extension name `name` among the extension fields, or nil.
    public func extensionValue(_ name: String) -> String? {
        var index = 0
        while index + 1 < extensionFields.count {
            if extensionFields[index] == name { return extensionFields[index + 1] }
            index += 2
        }
        return nil
    }
}
