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

    /// The receiver for a datagram, or nil (the caller drops and counts it).
    public func route(_ datagram: [UInt8], from source: TransportAddress) -> (any DatagramReceiver)? {
        if PacketClass(datagram) == .stun, let ufrag = STUNMessage.peekLocalUfragString(datagram) {
            return tables.withLockedValue { $0.byUfrag[ufrag] }
        }
        return tables.withLockedValue { $0.byAddress[source] }
    }

    public var counts: (ufrags: Int, addresses: Int) {
        tables.withLockedValue { ($0.byUfrag.count, $0.byAddress.count) }
    }
}
