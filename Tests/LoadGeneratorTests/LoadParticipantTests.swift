import ChorusCore
import DTLS
import Foundation
import ICELite
import PeerTransport
import RTCP
import RTP
import SRTP
import Testing

@testable import LoadGenerator

/// A load participant against the server's own `PeerTransport`, in process on a simulated
/// clock, as its shard drives it: `tick` whenever it is not idle, `receive` for each datagram.
/// What one side sends reaches the other within the same millisecond; `dropToParticipant`
/// decides which of the server's datagrams are lost.
final class LoadCallHarness {
    let server: PeerTransport
    let participant: LoadParticipant
    let participantAddress = TransportAddress(ipv4: "127.0.0.2", port: 50_000)!
    var now = MediaTime.seconds(100)
    var toServer: [[UInt8]] = []
    var serverTransmits: [Transmit] = []
    var serverEvents: [TransportEvent] = []
    var dropToParticipant: ([UInt8]) -> Bool = { _ in false }
    /// How often the participant was ticked (the shard passes over it while it is idle).
    var ticks = 0

    init(_ participant: LoadParticipant, transportCC: Bool = false) throws {
        self.participant = participant
        let serverContext = try DTLSContext(certificate: DTLSCertificate(commonName: "server"))
        let serverICE = ICECredentials.random()
        var configuration = PeerTransportConfiguration(
            localICE: serverICE, remoteICE: participant.connection.localICE, dtlsRole: .server,
            remoteFingerprints: [DTLSFingerprint(algorithm: .sha256,
                                                 digest: participant.connection.dtlsContext.certificate.fingerprint)],
            rtcpSSRC: SSRC(0xABCD), cname: "chorus", clockRates: [111: 48_000, 96: 90_000],
            ntpReference: NTPClockReference(mediaTime: now, ntp: NTPTimestamp(date: Date())))
        if transportCC { configuration.transportWideSequenceExtensionID = LoadSDP.transportWideCCExtensionID }
        server = try PeerTransport(configuration: configuration, dtlsContext: serverContext, now: now)
        participant.offersTransportCC = transportCC
        participant.connection.send = { [unowned self] datagram in self.toServer.append(datagram) }
        let answer = LoadSDP.Answer(
            ice: serverICE, host: "127.0.0.1", port: 40_000,
            fingerprint: DTLSFingerprint(algorithm: .sha256, digest: serverContext.certificate.fingerprint),
            serverIsPassive: true, transportCC: transportCC)
        participant.start(answer, now: now)
        exchange()
    }

    func run(milliseconds: Int, each: (() -> Void)? = nil) {
        for _ in 0..<milliseconds {
            now = now.adding(milliseconds: 1)
            each?()
            if participant.idleUntil <= now {
                ticks += 1
                participant.tick(now: now)
            }
            if now >= server.nextDeadline, let event = server.poll(now: now, transmits: &serverTransmits) {
                serverEvents.append(event)
            }
            exchange()
        }
    }

    /// Delivers everything in flight, both ways, until nothing more is said.
    func exchange() {
        while !toServer.isEmpty || !serverTransmits.isEmpty {
            for datagram in toServer {
                if case .success(let event?) = server.receive(datagram, from: participantAddress, now: now,
                                                              transmits: &serverTransmits) {
                    serverEvents.append(event)
                }
            }
            toServer.removeAll()
            let out = serverTransmits
            serverTransmits.removeAll()
            for transmit in out where !dropToParticipant(transmit.datagram) {
                participant.receive(transmit.datagram, now: now)
            }
        }
    }

    /// The RTP the server received from the participant.
    var serverRTP: [RTPPacket] {
        serverEvents.compactMap { if case .rtp(let packet) = $0 { packet } else { nil } }
    }

    /// The RTCP packets the server received from the participant.
    var serverRTCP: [RTCPPacket] {
        serverEvents.flatMap { event -> [RTCPPacket] in if case .rtcp(let compound) = event { Array(compound) } else { [] } }
    }

    /// A mix packet from the server (Opus, 20 ms of timestamp), sent through its transport.
    func sendMix(sequence: UInt16) {
        var packet: [UInt8] = []
        try? RTPHeaderFields(payloadType: PayloadType(masking: 111), sequenceNumber: sequence,
                             timestamp: UInt32(sequence) &* 960, ssrc: SSRC(0xABCD)).serialize(into: &packet)
        packet += [0xF8, 0xFF, 0xFE]
        server.sendRTP(packet, now: now, transmits: &serverTransmits)
    }
}

@Suite("Load generator: a participant against PeerTransport in process")
struct LoadParticipantCallTests {
    static func participant(_ kind: LoadAudio.Kind?, dtx: LoadDTX = .negotiated) throws -> LoadParticipant {
        let participant = LoadParticipant(
            room: 0, userId: "u", audio: try kind.map(LoadAudio.make), timeline: RoomTimeline(), isBurstTalker: false,
            isProbe: false, dtlsContext: try DTLSContext(certificate: DTLSCertificate(commonName: "load")))
        participant.dtxMode = dtx
        return participant
    }

    /// ICE (nominated by our check), DTLS (we are the client: the answer said passive), then
    /// the microphone's packets reach the server every 20 ms with contiguous sequence numbers,
    /// 960 samples apart, each with its level; the mix the server sends is counted, its losses too.
    @Test func aTalkerConnectsAndBothWaysAreMeasured() throws {
        let call = try LoadCallHarness(try Self.participant(.speech))
        call.run(milliseconds: 200)
        #expect(call.participant.connection.phase == .established)
        #expect(call.serverEvents.contains(.nominated(call.participantAddress)))
        #expect(call.server.isConnected)
        var sequence: UInt16 = 0
        call.run(milliseconds: 1_000) {
            guard call.now.nanoseconds % 20_000_000 == 0 else { return }
            sequence &+= 1
            call.sendMix(sequence: sequence)
        }
        let audio = call.serverRTP.filter { $0.header.ssrc == SSRC(call.participant.audioSSRC) }
        #expect(audio.count >= 54 && audio.count <= 61, "\(audio.count) packets in 1.2 s")
        let steps = zip(audio, audio.dropFirst()).map {
            ($1.header.sequenceNumber &- $0.header.sequenceNumber, $1.header.timestamp &- $0.header.timestamp)
        }
        #expect(steps.allSatisfy { $0 == (1, 960) })
        #expect(audio.allSatisfy { $0.headerExtensions.first(id: LoadSDP.audioLevelExtensionID) != nil })
        #expect(call.server.counters.packetsDropped == 0)
        // One mix packet in ten lost on the way: the participant counts exactly those.
        var dropped = 0
        call.dropToParticipant = { datagram in
            guard PacketClass(datagram) == .rtp, datagram.count > 4, datagram[3] % 10 == 5 else { return false }
            dropped += 1
            return true
        }
        call.run(milliseconds: 1_000) {
            guard call.now.nanoseconds % 20_000_000 == 0 else { return }
            sequence &+= 1
            call.sendMix(sequence: sequence)
        }
        let mix = try #require(call.participant.statistics.audioStreams[0xABCD])
        #expect(mix.expected == Int(sequence) && sequence > 90)
        #expect(dropped >= 4 && mix.lost == dropped, "\(mix.lost) of \(mix.expected) lost, \(dropped) dropped")
    }

    /// A silent listener in DTX sends a comfort-noise frame every 400 ms and is passed over by
    /// its shard in between: a few ticks a second instead of 200.
    @Test func aSilentListenerInDTXSleepsBetweenUpdates() throws {
        let call = try LoadCallHarness(try Self.participant(.silence, dtx: .on))
        call.run(milliseconds: 200)
        #expect(call.participant.microphone?.sendsDTX == true)
        let sentBefore = call.serverRTP.count
        call.ticks = 0
        call.run(milliseconds: 2_000)
        let sent = call.serverRTP.count - sentBefore
        #expect(sent >= 4 && sent <= 6, "\(sent) comfort-noise packets in 2 s")
        #expect(call.ticks <= 8, "ticked \(call.ticks) times in 2 s")
        #expect(call.participant.idleUntil > call.now)
    }

    /// With transport-cc: the participant's packets carry consecutive transport-wide numbers
    /// (stamped by its transport), and it reports the server's numbers back every 100 ms, the
    /// lost one as not received (and the server's estimator reads it).
    @Test func transportCCStampsWhatItSendsAndReportsWhatArrived() throws {
        let call = try LoadCallHarness(try Self.participant(.speech), transportCC: true)
        call.run(milliseconds: 200)
        #expect(call.participant.connection.phase == .established)
        let stamps = call.serverRTP.compactMap { packet in
            packet.headerExtensions.first(id: LoadSDP.transportWideCCExtensionID).map { $0.uint16(at: 0) }
        }
        #expect(stamps.count == call.serverRTP.count && stamps.count > 3)
        #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $1 &- $0 == 1 })
        var mixIndex = 0
        call.dropToParticipant = { datagram in
            guard PacketClass(datagram) == .rtp else { return false }
            mixIndex += 1
            return mixIndex == 3
        }
        for sequence in UInt16(1)...4 { call.sendMix(sequence: sequence) }
        call.exchange()
        call.run(milliseconds: 150)
        let reports = call.serverRTCP.compactMap { if case .transportFeedback(let feedback) = $0 { feedback } else { nil } }
        let report = try #require(reports.last)
        #expect(report.packets.map(\.isReceived) == [true, true, false, true])
        #expect(call.participant.connection.transportFeedbackSent >= 1)
    }
}

/// A listener that is not a probe reads its packets' clear headers and sends one in N through
/// SRTP: the same loss and transport-cc feedback as decrypting everything, and a forged packet
/// still shows when it is the one sampled.
@Suite("Load generator: plain listeners read clear headers")
struct LoadClearHeaderTests {
    static func mix(_ call: LoadCallHarness, count: Int, from first: UInt16) {
        for sequence in first..<(first + UInt16(count)) {
            call.sendMix(sequence: sequence)
            call.exchange()
            call.run(milliseconds: 20)
        }
    }

    @Test func lossAndFeedbackAreTheSameAndASampleIsAuthenticated() throws {
        let participant = try LoadParticipantCallTests.participant(.silence)
        participant.connection.authenticateOneIn = 4
        let call = try LoadCallHarness(participant, transportCC: true)
        call.run(milliseconds: 200)
        #expect(participant.connection.phase == .established)
        var dropped = 0
        call.dropToParticipant = { datagram in
            guard PacketClass(datagram) == .rtp, datagram.count > 4, datagram[3] % 10 == 5 else { return false }
            dropped += 1
            return true
        }
        Self.mix(call, count: 100, from: 1)
        let transport = try #require(participant.connection.transport)
        let mix = try #require(participant.statistics.audioStreams[0xABCD])
        #expect(mix.expected == 100 && mix.lost == dropped && dropped == 10, "\(mix.lost) lost, \(dropped) dropped")
        #expect(transport.counters.packetsReceived == 90 && transport.counters.packetsDropped == 0)
        let reports = call.serverRTCP.compactMap { if case .transportFeedback(let feedback) = $0 { feedback } else { nil } }
        let reported = reports.flatMap(\.packets)
        #expect(reported.filter(\.isReceived).count == 90 && reported.filter { !$0.isReceived }.count == 10,
                "\(reported.count) reported, \(reports.count) reports")
        // Four forged packets in a row (the tag broken): exactly one goes through SRTP and is
        // dropped; the other three are taken on their headers.
        call.dropToParticipant = { _ in false }
        for sequence in UInt16(101)...104 {
            call.sendMix(sequence: sequence)
            let out = call.serverTransmits
            call.serverTransmits.removeAll()
            for transmit in out {
                var forged = transmit.datagram
                forged[forged.count - 1] ^= 0xFF
                participant.receive(forged, now: call.now)
            }
        }
        #expect(transport.counters.packetsDropped == 1)
        #expect(transport.counters.packetsReceived == 93)
    }

    @Test func probesDecodeEverythingAndAreSpreadOverTheRooms() throws {
        var configuration = LoadConfiguration(url: "http://127.0.0.1:1", appKey: "k", appSecret: "s", rooms: 200,
                                              participants: 10, talkers: 1, durationSeconds: 1, rampUpPerSecond: 1,
                                              output: URL(fileURLWithPath: "/tmp"), target: "chorus")
        func probes() -> [Int] {
            (0..<configuration.rooms).flatMap { room in
                (0..<configuration.participants).filter { configuration.isProbe(room: room, position: $0) }.map { _ in room }
            }
        }
        #expect(probes().count == 40 && Set(probes()).count == 20 && probes().max() == 190)
        configuration.rooms = 1
        configuration.participants = 3_000
        configuration.talkers = 3
        #expect(probes().count == 2 && configuration.isProbe(room: 0, position: 3) && !configuration.isProbe(room: 0, position: 2))
        configuration.rooms = 30
        configuration.participants = 10
        #expect(probes().count == 30)
        configuration.maximumProbes = 0
        #expect(probes().isEmpty)
    }
}

/// The traffic sources alone: what they write must parse as what a browser sends.
@Suite("Load generator: traffic sources")
struct LoadSourceTests {
    /// Every frame's packets: the VP8 descriptor (S on the first packet of a frame, the 15-bit
    /// picture ID one up per frame), the marker on the last, the timestamp 6,000 a frame, and
    /// with transport-cc the element the transport fills in.
    @Test func theCameraWritesVP8AsRFC7741Says() throws {
        var camera = LoadCameraSender(camera: .single(try LoadVideo.make(seconds: 1)), ssrcs: [77])
        camera.start(transportWideSequence: true)
        var datagrams: [[UInt8]] = []
        let start = MediaTime.seconds(10)
        for step in 0...10 { camera.tick(now: start.adding(milliseconds: UInt64(step) * 67)) { datagrams.append($0) } }
        let packets = try datagrams.map { try RTPPacket(parsing: $0) }
        let frames = Dictionary(grouping: packets, by: \.header.timestamp).values.sorted { $0[0].header.sequenceNumber < $1[0].header.sequenceNumber }
        #expect(frames.count >= 9 && frames.count <= 11)
        #expect(frames.contains { $0.count > 1 }, "a keyframe spans packets")
        var pictureIDs: [UInt16] = []
        for frame in frames {
            let descriptors = try frame.map { try VP8PayloadDescriptor(parsing: $0.payload) }
            #expect(descriptors.map(\.isStartOfFrame) == [true] + Array(repeating: false, count: frame.count - 1))
            #expect(Set(descriptors.compactMap(\.pictureID)).count == 1 && descriptors.allSatisfy(\.hasLongPictureID))
            #expect(frame.map(\.header.marker) == Array(repeating: false, count: frame.count - 1) + [true])
            #expect(frame.allSatisfy { $0.headerExtensions.first(id: LoadSDP.transportWideCCExtensionID)?.count == 2 })
            pictureIDs.append(descriptors[0].pictureID ?? 0)
        }
        #expect(zip(pictureIDs, pictureIDs.dropFirst()).allSatisfy { ($1 &- $0) & 0x7FFF == 1 })
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $1[0].header.timestamp &- $0[0].header.timestamp == 6_000 })
        #expect(try VP8PayloadDescriptor(parsing: frames[0][0].payload).isKeyFrame(payload: frames[0][0].payload))
    }

    /// The burst talker notes each burst's start on the room's timeline as it sends it: the
    /// frames 0, 50 and 100 of its loop, one second apart.
    @Test func theBurstTalkerMarksItsBursts() throws {
        let timeline = RoomTimeline()
        var microphone = LoadMicrophone(audio: try LoadAudio.make(.burst), ssrc: 5, timeline: timeline, isBurstTalker: true)
        microphone.start(dtx: .off, answerUsesDTX: false, transportWideSequence: false)
        let start = MediaTime.seconds(10)
        var sent = 0
        for step in 0...150 { microphone.tick(now: start.adding(milliseconds: UInt64(step) * 20)) { _ in sent += 1 } }
        #expect(sent >= 149 && sent <= 151)
        let bursts = timeline.bursts(from: start, until: start.adding(milliseconds: 3_100))
        #expect(bursts.count == 3)
        #expect(zip(bursts, bursts.dropFirst()).allSatisfy { $1.nanoseconds(since: $0) == 1_000_000_000 })
    }
}
