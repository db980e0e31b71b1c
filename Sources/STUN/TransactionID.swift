import COpenSSL

/// The 96-bit STUN transaction ID (RFC 8489 §5, §6): chosen at random by the client, echoed by
/// the server, and used by the client to match a response to its request. Kept as two integers
/// so that it is hashable and compared without allocation.
public struct TransactionID: Hashable, Sendable, CustomStringConvertible {
    /// Bytes 0..<4 of the ID, big-endian.
    public let high: UInt32
    /// Bytes 4..<12 of the ID, big-endian.
    public let low: UInt64

    public init(high: UInt32, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// nil unless `bytes` holds exactly 12 bytes.
    public init?(bytes: some Collection<UInt8>) {
        let bytes = Array(bytes)
        guard bytes.count == 12, let high = bytes.stunUInt32(at: 0), let low = bytes.stunUInt64(at: 4) else {
            return nil
        }
        self.init(high: high, low: low)
    }

    /// The 12 bytes in wire order.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(12)
        out.appendBigEndian(high)
        out.appendBigEndian(low)
        return out
    }

    /// A fresh ID from OpenSSL's DRBG. RFC 8489 §6 asks for a cryptographically random one so
    /// that an off-path attacker cannot forge a response.
    public static func random() -> TransactionID {
        let bytes = STUNRandom.bytes(12)
        return TransactionID(high: bytes.stunUInt32(at: 0) ?? 0, low: bytes.stunUInt64(at: 4) ?? 0)
    }

    public var description: String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}

/// Cryptographically secure random bytes for transaction IDs, ICE tie-breakers and credentials,
/// drawn from OpenSSL's DRBG (already linked for DTLS).
public enum STUNRandom {
    /// `count` random bytes (none for a negative count).
    public static func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: max(count, 0))
        let ok = out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(clamping: $0.count)) }
        // Not peer input: only a system without an entropy source gets here.
        precondition(ok == 1, "RAND_bytes failed: the system has no entropy source")
        return out
    }

    /// A random 64-bit value, for example an ICE tie-breaker (RFC 8445 §7.1.3).
    public static func uint64() -> UInt64 {
        bytes(8).reduce(0) { $0 << 8 | UInt64($1) }
    }
}
