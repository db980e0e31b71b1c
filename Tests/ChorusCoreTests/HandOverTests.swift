import ChorusCore
import Synchronization
import Testing

/// A receiver for the grouping test: a handler shared with others (a room), and a log of the
/// calls it got. `Mutex` makes it `Sendable`.
private final class GroupedReceiver: DatagramReceiver {
    let name: String
    let handler: ObjectIdentifier
    let calls: Mutex<[[String]]>

    init(_ name: String, handler: AnyObject) {
        self.name = name
        self.handler = ObjectIdentifier(handler)
        self.calls = Mutex([])
    }

    func receive(_ datagrams: ArraySlice<ReceivedDatagram>, readerIsLight: Bool) {
        let names = datagrams.map { "\(($0.receiver as? GroupedReceiver)?.name ?? "?")\($0.datagram[0])" }
        calls.withLock { $0.append(names + [readerIsLight ? "light" : "busy"]) }
    }
}

@Suite("ReceivedDatagram.handOver: a read's datagrams, one call per room")
struct HandOverTests {
    @Test func eachHandlerGetsItsDatagramsInOneCallInArrivalOrder() throws {
        let roomA = NSObjectLike(), roomB = NSObjectLike()
        let a1 = GroupedReceiver("a", handler: roomA), a2 = GroupedReceiver("x", handler: roomA)
        let b = GroupedReceiver("b", handler: roomB), alone = GroupedReceiver("c", handler: NSObjectLike())
        let source = try #require(TransportAddress(ipv4: "10.0.0.1", port: 5000))
        let order: [(GroupedReceiver, UInt8)] = [(a1, 1), (b, 2), (a2, 3), (alone, 4), (b, 5), (a1, 6)]
        var read = order.map {
            ReceivedDatagram(receiver: $0.0, datagram: [$0.1], source: source, time: .milliseconds(1))
        }
        var group: [ReceivedDatagram] = []
        var handlers: [ObjectIdentifier?] = []
        ReceivedDatagram.handOver(&read, readerIsLight: false, group: &group, handlers: &handlers)
        // Room A's three datagrams (two participants) in one call to the first one's receiver.
        #expect(a1.calls.withLock { $0 } == [["a1", "x3", "a6", "busy"]])
        #expect(a2.calls.withLock { $0 }.isEmpty)
        #expect(b.calls.withLock { $0 } == [["b2", "b5", "busy"]])
        #expect(alone.calls.withLock { $0 } == [["c4", "busy"]])
        #expect(read.isEmpty && group.isEmpty)
        // The scratch is reused: a second read hands over the same way.
        read = [ReceivedDatagram(receiver: b, datagram: [7], source: source, time: .milliseconds(2))]
        ReceivedDatagram.handOver(&read, readerIsLight: true, group: &group, handlers: &handlers)
        #expect(b.calls.withLock { $0 }.last == ["b7", "light"])
    }
}

/// A plain object whose identity stands for a room.
private final class NSObjectLike: Sendable {}
