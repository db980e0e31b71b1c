import ChorusCore
import ChorusTestSupport
import DTLS
import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import Rooms

/// Keeps the receiver the room registers for each ufrag, as the media port's router would.
/// `@unchecked Sendable`: its mutable state is only touched under `lock`.
private final class ReceiverRouting: MediaRouting, @unchecked Sendable {
    private let lock = NIOLock()
    private var receivers: [String: any DatagramReceiver] = [:]
    private var latest: (any DatagramReceiver)?

    func register(ufrag: String, receiver: any DatagramReceiver) {
        lock.withLock {
            receivers[ufrag] = receiver
            latest = receiver
        }
    }
    func bind(_ address: TransportAddress, to receiver: any DatagramReceiver) {}
    func unregister(ufrag: String) { _ = lock.withLock { receivers.removeValue(forKey: ufrag) } }
    func unbind(_ address: TransportAddress) {}
    func register(ssrc: SSRC, receiver: any DatagramReceiver) {}
    func unregister(ssrc: SSRC) {}
    /// The receiver registered last.
    var any: (any DatagramReceiver)? { lock.withLock { latest } }
}

/// Records each datagram the room sends with the thread that sent it, and the batch sizes.
/// `@unchecked Sendable`: its mutable properties are only touched under `lock`.
private final class ThreadRecordingSink: DatagramSink, @unchecked Sendable {
    private let lock = NIOLock()
    private var sent: [(datagram: [UInt8], thread: pthread_t)] = []
    private var batchSizes: [Int] = []

    func send(_ datagram: [UInt8], to destination: TransportAddress) {
        let thread = pthread_self()
        lock.withLock { sent.append((datagram, thread)) }
    }

    func send(batch: [Transmit]) {
        lock.withLock { batchSizes.append(batch.count) }
        for item in batch { send(item.datagram, to: item.destination) }
    }

    /// Takes the sizes of the batches sent since the last call.
    func takeBatchSizes() -> [Int] {
        lock.withLock {
            defer { batchSizes.removeAll() }
            return batchSizes
        }
    }

    /// Takes what was sent since the last call.
    func take() -> [(datagram: [UInt8], thread: pthread_t)] {
        lock.withLock {
            defer { sent.removeAll() }
            return sent
        }
    }
}

@Suite("ParticipantConnection: which thread runs a datagram")
struct ParticipantConnectionTests {
    private let routing = ReceiverRouting()
    private let sink = ThreadRecordingSink()
    private let clock = ManualClock()
    private let source = RecordingTickSource()

    /// A room ticked by a tick source the test fires, on a clock the test moves, with one
    /// aiortc participant whose datagrams the test hands to the room's receiver the way the
    /// media port's reader does.
    private func joinedPeer(fixture: String = "aiortc-audio-only.sdp") async throws -> (Room, ClientPeer, any DatagramReceiver) {
        let media = MediaEnvironment(dtls: try DTLSContext(certificate: DTLSCertificate()), sink: sink,
                                     routing: routing, candidateAddress: "127.0.0.1", candidatePort: 10_000,
                                     clock: clock, ticks: source)
        let key = RoomKey(application: ApplicationKey(randomBytes: Array(repeating: 7, count: 16)),
                          room: try RoomID(validating: "inline"))
        let room = Room(key: key, settings: .defaults, logger: Logger(label: "test"), media: media)
        let peer = try ClientPeer(name: "a", port: 40_000, fixture: fixture, seed: 3)
        let answer = try await room.join(
            JoinRequest(callId: CallID(guid: ApplicationKey(randomBytes: Array(repeating: 9, count: 16)).rawValue),
                        userId: try UserID(validating: "a"), displayName: nil, offer: try peer.offer()))
        try peer.accept(answer: answer.sdp)
        return (room, peer, try #require(routing.any))
    }

    /// Hands `datagram` over as a reader would and returns whether the room's reply left on
    /// the caller's own thread (and what was sent).
    private func hand(_ datagrams: [UInt8]..., from peer: ClientPeer, to receiver: any DatagramReceiver,
                      readerIsLight: Bool) async throws -> (inline: Bool, sent: [[UInt8]]) {
        // A datagram handed over before has left the queue (not only its replies): whether the
        // queue is idle is then the policy's fact, not a race with the last hop.
        if let room = (receiver as? ParticipantConnection)?.room { try await eventually { room.executor.isIdle } }
        let caller = pthread_self()
        let read = datagrams.map { ReceivedDatagram(receiver: receiver, datagram: $0, source: peer.address, time: .now()) }
        receiver.receive(read[...], readerIsLight: readerIsLight)
        var sent: [(datagram: [UInt8], thread: pthread_t)] = []
        try await eventually(every: .milliseconds(5)) {
            sent += sink.take()
            return sent.count >= datagrams.count
        }
        return (sent.contains { pthread_equal($0.thread, caller) != 0 }, sent.map(\.datagram))
    }

    /// An audio-only participant's datagrams may wait for the next read before a tick; one
    /// with video asks the media reader to read on arrival (video is forwarded then).
    @Test func onlyAParticipantWithVideoWantsPromptReads() async throws {
        let (_, _, audioOnly) = try await joinedPeer()
        #expect(!audioOnly.wantsPromptReads)
        let (_, _, withVideo) = try await joinedPeer(fixture: "aiortc-av-2slots.sdp")
        #expect(withVideo.wantsPromptReads)
    }

    /// Fires the room's tick once (inline), so the reader's inline window is set.
    private func tick() throws {
        clock.advance(milliseconds: 20)
        #expect(try #require(source.all.first).fire(mayRunInline: true))
    }

    @Test func aLightReadsCheckIsAnsweredOnTheReadersThreadAndABusyReadsHops() async throws {
        let (room, peer, receiver) = try await joinedPeer()
        // Before the room's first tick nothing runs inline.
        let early = try #require(peer.connectivityCheck(useCandidate: false))
        #expect(try await !hand(early.datagram, from: peer, to: receiver, readerIsLight: true).inline)
        try tick()
        // A busy read hands every datagram over: the answer comes from one of the room's workers.
        for _ in 0..<3 {
            let check = try #require(peer.connectivityCheck(useCandidate: false))
            let (inline, sent) = try await hand(check.datagram, from: peer, to: receiver, readerIsLight: false)
            #expect(!inline)
            #expect(sent.first.map(PacketClass.init) == .stun)
        }
        // A light read of a small room the source ticks runs it itself (`RoomScheduling`).
        for _ in 0..<3 {
            let check = try #require(peer.connectivityCheck(useCandidate: false))
            let (inline, sent) = try await hand(check.datagram, from: peer, to: receiver, readerIsLight: true)
            #expect(inline)
            #expect(sent.first.map(PacketClass.init) == .stun)
        }
        await room.close()
    }

    @Test func aReadsDatagramsForOneRoomRunInOneStepWithOneBatchOfReplies() async throws {
        let (room, peer, receiver) = try await joinedPeer()
        try tick()
        for readerIsLight in [false, true] {
            _ = sink.takeBatchSizes()
            let checks = try (0..<3).map { _ in try #require(peer.connectivityCheck(useCandidate: false)).datagram }
            let (_, sent) = try await hand(checks[0], checks[1], checks[2], from: peer, to: receiver,
                                           readerIsLight: readerIsLight)
            #expect(sent.count == 3 && sent.allSatisfy { PacketClass($0) == .stun })
            #expect(sink.takeBatchSizes().contains(3), "light read: \(readerIsLight)")
        }
        await room.close()
    }

    @Test func aDTLSHandshakeAlwaysHops() async throws {
        let (room, peer, receiver) = try await joinedPeer()
        // Nominate, and take the client's first flight from the check's answer.
        let check = try #require(peer.connectivityCheck(useCandidate: true))
        let (_, answers) = try await hand(check.datagram, from: peer, to: receiver, readerIsLight: false)
        let hello = try #require(answers.flatMap { peer.receive($0, now: .now()) }.first)
        #expect(PacketClass(hello.datagram) == .dtls)
        try tick()  // the room has ticked: a check could run inline now
        // The server's flight (its signature takes a millisecond) is never made on the reader.
        let (inline, sent) = try await hand(hello.datagram, from: peer, to: receiver, readerIsLight: true)
        #expect(!inline)
        #expect(sent.first.map(PacketClass.init) == .dtls)
        await room.close()
    }
}
