import ChorusCore
import NIOConcurrencyHelpers
import NIOCore
import Synchronization

/// One admitted ICE-TCP connection and the bytes queued for it that its event loop has not
/// written yet. NIO's writability only sees bytes already handed to the channel; a room that
/// sends faster than the loop runs would otherwise queue tasks without bound.
final class TCPConnection: Sendable {
    let channel: any Channel
    let queuedBytes = Atomic<Int>(0)

    init(channel: any Channel) {
        self.channel = channel
    }
}

/// The open ICE-TCP connections of the media TCP port, by the peer's address (with transport
/// `.tcp`), and the limits on them: at most `perHostLimit` connections from one IP address and
/// `totalLimit` in all, so that no client can make the server hold unbounded sockets. Read by
/// the rooms' threads when they send, written by the event loops as connections come and go.
/// `Sendable` without `@unchecked`: its one stored state is a `NIOLockedValueBox`.
final class TCPConnectionTable: Sendable {
    private struct State {
        var channels: [TransportAddress: TCPConnection] = [:]
        var perHost: [TransportAddress: Int] = [:]
        var total = 0
    }

    let perHostLimit: Int
    let totalLimit: Int
    private let state = NIOLockedValueBox(State())

    init(perHostLimit: Int, totalLimit: Int) {
        self.perHostLimit = perHostLimit
        self.totalLimit = totalLimit
    }

    /// The address with its port cleared: the key the per-host limit counts by.
    private static func host(of address: TransportAddress) -> TransportAddress {
        TransportAddress(bytes: address.bytes, port: 0, transport: .tcp) ?? address
    }

    /// Takes a place for a new connection from `address`; false when a limit is reached (the
    /// caller closes the connection at once).
    func admit(_ address: TransportAddress, channel: any Channel) -> Bool {
        let host = Self.host(of: address)
        return state.withLockedValue { state in
            guard state.total < totalLimit, state.perHost[host, default: 0] < perHostLimit,
                  state.channels[address] == nil
            else { return false }
            state.total += 1
            state.perHost[host, default: 0] += 1
            state.channels[address] = TCPConnection(channel: channel)
            return true
        }
    }

    /// Gives the place back when the admitted connection from `address` closes.
    func release(_ address: TransportAddress) {
        let host = Self.host(of: address)
        state.withLockedValue { state in
            guard state.channels.removeValue(forKey: address) != nil else { return }
            state.total -= 1
            let left = state.perHost[host, default: 1] - 1
            state.perHost[host] = left > 0 ? left : nil
        }
    }

    func connection(for address: TransportAddress) -> TCPConnection? {
        state.withLockedValue { $0.channels[address] }
    }

    var count: Int { state.withLockedValue { $0.total } }

    /// Every open connection (to close them at shutdown).
    var all: [any Channel] { state.withLockedValue { $0.channels.values.map(\.channel) } }
}
