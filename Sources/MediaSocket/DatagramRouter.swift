import ChorusCore
import STUN
import NIOConcurrencyHelpers

/// The media port's demultiplexer (see `MediaRouting`). Called on the NIO event loop for every
/// datagram, so each lookup is one hash probe under an uncontended lock; registrations happen
/// only on joins, nominations and leaves. `Sendable` without `@unchecked`: its one stored
/// property is a `NIOLockedValueBox`, so every access is under the lock.
public final class DatagramRouter: MediaRouting {
    private struct Tables {
        var byUfrag: [String: any DatagramReceiver] = [:]
        var byAddress: [TransportAddress: any DatagramReceiver] = [:]
        var bySSRC: [SSRC: any DatagramReceiver] = [:]
    }

    private let tables = NIOLockedValueBox(Tables())

    public init() {}

    public func register(ufrag: String, receiver: any DatagramReceiver) {
        tables.withLockedValue { $0.byUfrag[ufrag] = receiver }
    }

    public func bind(_ address: TransportAddress, to receiver: any DatagramReceiver) {
        tables.withLockedValue { $0.byAddress[address] = receiver }
    }

    public func unregister(ufrag: String) {
        tables.withLockedValue { _ = $0.byUfrag.removeValue(forKey: ufrag) }
    }

    public func unbind(_ address: TransportAddress) {
        tables.withLockedValue { _ = $0.byAddress.removeValue(forKey: address) }
    }

    public func register(ssrc: SSRC, receiver: any DatagramReceiver) {
        tables.withLockedValue { $0.bySSRC[ssrc] = receiver }
    }

    public func unregister(ssrc: SSRC) {
        tables.withLockedValue { _ = $0.bySSRC.removeValue(forKey: ssrc) }
    }

    /// The receiver for a datagram, or nil (the caller drops and counts it). RTP and RTCP from
    /// an address no one is bound to go by their sender SSRC, if a participant sends it.
    public func route(_ datagram: [UInt8], from source: TransportAddress) -> (any DatagramReceiver)? {
        let kind = PacketClass(datagram)
        if kind == .stun, let ufrag = STUNMessage.peekLocalUfragString(datagram) {
            return tables.withLockedValue { $0.byUfrag[ufrag] }
        }
        return tables.withLockedValue { tables in
            if let receiver = tables.byAddress[source] { return receiver }
            guard let ssrc = Self.senderSSRC(datagram, kind: kind) else { return nil }
            return tables.bySSRC[ssrc]
        }
    }

    /// The sender SSRC of an RTP (bytes 8–11) or RTCP (bytes 4–7) packet.
    static func senderSSRC(_ datagram: [UInt8], kind: PacketClass) -> SSRC? {
        let offset: Int
        switch kind {
        case .rtp: offset = 8
        case .rtcp: offset = 4
        default: return nil
        }
        guard datagram.count >= offset + 4 else { return nil }
        return SSRC(datagram.uint32(at: offset))
    }

    public var counts: (ufrags: Int, addresses: Int) {
        tables.withLockedValue { ($0.byUfrag.count, $0.byAddress.count) }
    }
}
