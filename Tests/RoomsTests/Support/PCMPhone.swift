import AudioMixer
import ChorusCore
import ChorusTestSupport
import RTP
import Rooms

/// A room member of a second kind, for room tests: plain RTP to and from one address, L16 at
/// 8 kHz both ways (RFC 3551 §4.5.11), no ICE, DTLS or SRTP: a phone's media with the simplest
/// codec. It says a tone (or silence) in 20 ms packets and keeps every packet the room sends it,
/// so a test can decode what it heard at its own rate.
final class PCMPhone {
    static let payloadType: UInt8 = 96
    let name: String
    let address: TransportAddress
    let clockRate: Int
    let ssrc = SSRC(0x5EED_0001)
    /// The SSRC the room sends this member its mix on.
    let mixSSRC = SSRC(0x5EED_0002)
    var tone: TestTone?
    private(set) var received: [RTPPacket] = []
    private var sequenceNumber: UInt16 = 4_000
    private var timestamp: UInt32 = 80_000

    init(name: String, address: TransportAddress, clockRate: Int = 8_000) {
        self.name = name
        self.address = address
        self.clockRate = clockRate
    }

    /// Its contract: L16 at its rate in and out.
    var media: MemberMedia {
        let format = AudioFormat.l16(clockRate: clockRate, payloadType: Self.payloadType)!
        return MemberMedia(audioIn: .init(format: format, ssrc: ssrc), audioOut: .init(format: format, ssrc: mixSSRC),
                           sendsAudio: true)
    }

    func say(_ frequency: Double?) {
        tone = frequency.map { TestTone(frequency: $0, amplitude: 0.3, sampleRate: Double(clockRate)) }
    }

    /// The next 20 ms: one RTP packet of L16 samples (silence without a tone).
    func nextPacket(to server: TransportAddress) -> Transmit {
        let samples = clockRate / 50
        let pcm = tone?.nextFrame(samples: samples) ?? [Int16](repeating: 0, count: samples)
        var packet: [UInt8] = []
        try? RTPHeaderFields(marker: false, payloadType: PayloadType(masking: Self.payloadType),
                             sequenceNumber: sequenceNumber, timestamp: timestamp, ssrc: ssrc).serialize(into: &packet)
        for sample in pcm {
            packet.append(UInt8(truncatingIfNeeded: UInt16(bitPattern: sample) >> 8))
            packet.append(UInt8(truncatingIfNeeded: UInt16(bitPattern: sample)))
        }
        sequenceNumber &+= 1
        timestamp &+= UInt32(samples)
        return (packet, server)
    }

    func receive(_ datagram: [UInt8]) {
        if PacketClass(datagram) == .rtp, let packet = try? RTPPacket(parsing: datagram) { received.append(packet) }
    }

    /// The mix it heard, decoded at its own rate in sequence order.
    var heard: [Int16] {
        var unwrapper = SequenceNumberUnwrapper()
        let ordered = received.filter { $0.header.ssrc == mixSSRC }
            .map { (unwrapper.unwrap($0.header.sequenceNumber), $0) }.sorted { $0.0 < $1.0 }
        return ordered.flatMap { _, packet in
            let payload = Array(packet.payload)
            return stride(from: 0, to: payload.count - 1, by: 2).map {
                Int16(bitPattern: UInt16(payload[$0]) << 8 | UInt16(payload[$0 + 1]))
            }
        }
    }
}
