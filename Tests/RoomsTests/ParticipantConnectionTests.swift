import ChorusCore
import ChorusTestSupport
import DTLS
import Foundation
import Logging
import NIOConcurrencyHelpers
import Rooms
import Testing

/// Keeps the receiver the room registers for each ufrag, as the media port's router would.
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

    /// A room on the real clock (its ticks run), with one aiortc participant whose ICE check
    /// the test hands to the room's receiver the way the media port's reader does.
    private func joinedPeer(fixture: String = "aiortc-audio-only.sdp") async throws -> (Room, ClientPeer, any DatagramReceiver) {
        // Consent that outlasts the test run: on the real clock, a run whose tasks all wait
        // ~30 s for the two cores (measured in `make test` from a fresh clone) let the default
        // 30 s expire between the join and the first check, and the room dropped the participant.
        let media = MediaEnvironment(dtls: try DTLSContext(certificate: DTLSCertificate()), sink: sink,
                                     routing: routing, candidateAddress: "127.0.0.1", candidatePort: 10_000,
                                     consentTimeoutNanoseconds: 600_000_000_000)
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

    @Test func aLightReadsCheckIsAnsweredOnTheReadersThreadAndABusyReadsHops() async throws {
        let (room, peer, receiver) = try await joinedPeer()
        // A busy read hands every datagram over: the answer comes from one of the room's workers.
        for _ in 0..<5 {
            let check = try #require(peer.connectivityCheck(useCandidate: false))
            let (inline, sent) = try await hand(check.datagram, from: peer, to: receiver, readerIsLight: false)
            #expect(!inline)
            #expect(sent.first.map(PacketClass.init) == .stun)
        }
        // A light read runs it itself once the room has ticked, except in the 2 ms before each
        // tick (the reader must not wait behind it): within a few tries one lands in between.
        var inlineAnswers = 0
        for _ in 0..<40 where inlineAnswers < 3 {
            let check = try #require(peer.connectivityCheck(useCandidate: false))
            let (inline, sent) = try await hand(check.datagram, from: peer, to: receiver, readerIsLight: true)
            #expect(sent.first.map(PacketClass.init) == .stun)
            if inline { inlineAnswers += 1 }
            try await Task.sleep(for: .milliseconds(7))
        }
        #expect(inlineAnswers == 3)
        await room.close()
    }

    @Test func aReadsDatagramsForOneRoomRunInOneStepWithOneBatchOfReplies() async throws {
        let (room, peer, receiver) = try await joinedPeer()
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
        try await Task.sleep(for: .milliseconds(60))  // the room has ticked: a check could run inline now
        // The server's flight (its signature takes a millisecond) is never made on the reader.
        let (inline, sent) = try await hand(hello.datagram, from: peer, to: receiver, readerIsLight: true)
        #expect(!inline)
        #expect(sent.first.map(PacketClass.init) == .dtls)
        await room.close()
    }
}
