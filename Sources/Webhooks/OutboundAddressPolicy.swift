import Foundation
import NIOConcurrencyHelpers

/// Which addresses the server may send to on an application's behalf (webhook endpoints, RTP
/// forwards): never loopback, private, link-local (which holds the clouds' metadata service
/// 169.254.169.254), carrier-grade NAT, multicast or unspecified addresses — else anyone with
/// an application key could make the server reach its own network (SSRF). A test or a trusted
/// deployment may allow them (`--webhooks-allow-private`). Names are resolved here, and the
/// connection goes to the address that was checked, so a name cannot change between the check
/// and the connect (DNS rebinding).
public struct OutboundAddressPolicy: Sendable {
    static let lookupTimeout: Duration = .seconds(3)
    public var allowPrivate: Bool

    public init(allowPrivate: Bool = false) {
        self.allowPrivate = allowPrivate
    }

    /// Why `host` may not be reached, or the addresses to connect to (all allowed).
    public func resolve(_ host: String, port: Int) async -> Result<[ResolvedAddress], OutboundRefusal> {
        // getaddrinfo has no timeout of its own: a resolver that never answers is given up on
        // after `lookupTimeout` (its thread finishes on its own).
        let addresses = await withCheckedContinuation { (continuation: CheckedContinuation<[ResolvedAddress], Never>) in
            let resumed = NIOLockedValueBox(false)
            let resume = { @Sendable (value: [ResolvedAddress]) in
                if resumed.withLockedValue({ done in defer { done = true }; return !done }) { continuation.resume(returning: value) }
            }
            Task.detached { resume(Self.lookup(host, port: port)) }
            Task {
                try? await Task.sleep(for: Self.lookupTimeout)
                resume([])
            }
        }
        guard !addresses.isEmpty else { return .failure(.unresolved(host)) }
        if !allowPrivate, let refused = addresses.first(where: { Self.isPrivate($0.bytes) }) {
            return .failure(.notAllowed(host: host, address: refused.text))
        }
        return .success(addresses)
    }

    /// Whether an address (4 or 16 bytes) is one of the refused kinds.
    public static func isPrivate(_ bytes: [UInt8]) -> Bool {
        if bytes.count == 16 {
            if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
                return isPrivate(Array(bytes[12..<16]))  // IPv4-mapped
            }
            if bytes[0..<15].allSatisfy({ $0 == 0 }) { return true }  // :: and ::1
            if bytes[0] & 0xFE == 0xFC { return true }  // fc00::/7 unique local
            if bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 { return true }  // fe80::/10 link-local
            if bytes[0] == 0xFF { return true }  // multicast
            if bytes[0] == 0x00 && bytes[1] == 0x64 && bytes[2] == 0xFF && bytes[3] == 0x9B {
                return isPrivate(Array(bytes[12..<16]))  // 64:ff9b::/96 NAT64 of an IPv4 address
            }
            return false
        }
        guard bytes.count == 4 else { return true }
        switch (bytes[0], bytes[1]) {
        case (0, _), (10, _), (127, _): return true
        case (100, 64...127): return true  // carrier-grade NAT
        case (169, 254): return true  // link-local, metadata services
        case (172, 16...31), (192, 168): return true
        case (192, 0) where bytes[2] == 0: return true  // IETF protocol assignments
        case (198, 18...19): return true  // benchmarking
        case (224...255, _): return true  // multicast, reserved, broadcast
        default: return false
        }
    }

    /// getaddrinfo, blocking (run off the event loops): every TCP address of `host`.
    private static func lookup(_ host: String, port: Int) -> [ResolvedAddress] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(list) }
        var result: [ResolvedAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            if let address = ResolvedAddress(info.pointee) { result.append(address) }
            cursor = info.pointee.ai_next
        }
        return result
    }
}

/// One resolved address: its bytes (4 or 16) and its text.
public struct ResolvedAddress: Sendable, Equatable {
    public let bytes: [UInt8]
    public let text: String

    init?(_ info: addrinfo) {
        guard let raw = info.ai_addr else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        switch info.ai_family {
        case AF_INET:
            var address = raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            bytes = withUnsafeBytes(of: &address) { Array($0) }
            inet_ntop(AF_INET, &address, &buffer, socklen_t(buffer.count))
        case AF_INET6:
            var address = raw.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
            bytes = withUnsafeBytes(of: &address) { Array($0) }
            inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count))
        default:
            return nil
        }
        text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Why an outbound destination was refused.
public enum OutboundRefusal: Error, Equatable, CustomStringConvertible {
    case unresolved(String)
    case notAllowed(host: String, address: String)

    public var description: String {
        switch self {
        case .unresolved(let host): "\(host) does not resolve"
        case .notAllowed(let host, let address):
            "\(host) resolves to \(address): loopback, private, link-local and metadata addresses are not allowed"
        }
    }
}
