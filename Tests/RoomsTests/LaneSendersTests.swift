import ChorusCore
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Rooms

/// Records every batch it is given and the thread that gave it; `gate` holds the first send
/// until it is signalled (a lane that cannot keep up).
private final class RecordingSink: DatagramSink {
    let batches = Mutex<[(first: UInt8, thread: pthread_t)]>([])
    let gate: DispatchSemaphore?

    init(gate: DispatchSemaphore? = nil) {
        self.gate = gate
    }

    func send(_ datagram: [UInt8], to destination: TransportAddress) {
        send(batch: [(datagram, destination)])
    }

    func send(batch: [Transmit]) {
        if let gate, batches.withLock({ $0.isEmpty }) { gate.wait() }
        let first = batch.first?.datagram.first ?? 0
        batches.withLock { $0.append((first, pthread_self())) }
    }

    var firsts: [UInt8] { batches.withLock { $0.map(\.first) } }
}

@Suite struct LaneSendersTests {
    private func batch(_ tag: UInt8) throws -> [Transmit] {
        let address = try #require(TransportAddress(ipv4: "127.0.0.1", port: 5_000 + UInt16(tag)))
        return [([tag, 1, 2], address), ([tag, 3, 4], address)]
    }

    @Test func oneLanesBatchesLeaveInOrderOffTheCallersThread() throws {
        let sink = RecordingSink()
        let senders = LaneSenders(lanes: 2, label: "test")
        for tag in UInt8(1)...3 { senders.send(try batch(tag), lane: 0, sink: sink) }
        senders.drain()
        #expect(sink.firsts == [1, 2, 3])
        let caller = pthread_self()
        #expect(sink.batches.withLock { $0.allSatisfy { pthread_equal($0.thread, caller) == 0 } })
    }

    @Test func drainWaitsForTheBatchInFlight() throws {
        // The room drains before each step's batches: one step in flight, never a queue.
        let gate = DispatchSemaphore(value: 0)
        let sink = RecordingSink(gate: gate)
        let senders = LaneSenders(lanes: 2, label: "test")
        senders.send(try batch(1), lane: 1, sink: sink)
        let drained = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            senders.drain()
            drained.signal()
        }
        // The batch is held at the gate: drain has not returned.
        #expect(drained.wait(timeout: .now() + .milliseconds(200)) == .timedOut)
        gate.signal()
        drained.wait()
        #expect(sink.firsts == [1])
    }

    @Test func aLaneBeyondTheSendersIsSentOnTheCallersThread() throws {
        let sink = RecordingSink()
        let senders = LaneSenders(lanes: 1, label: "test")
        senders.send(try batch(7), lane: 3, sink: sink)
        // No drain: it was sent before `send` returned.
        #expect(sink.firsts == [7])
        #expect(sink.batches.withLock { pthread_equal($0[0].thread, pthread_self()) != 0 })
    }
}
