import ChorusCore
import RTP
import SRTP

/// RTP out: the room's full mix sent as plain RTP (or SRTP with a key the
/// application gives) to a host and port, for transcription or streaming engines. It is the
/// same packet the room sends its listeners and records, so forwarding costs one RTP header and
/// one datagram per tick; ticks without a packet (a silent mix) send nothing and the timestamp
/// moves on, as a DTX sender's does (the next packet has the marker bit).
struct MixForwarder {
    let id: String
    let destination: TransportAddress
    let payloadType: UInt8
    let ssrc: UInt32
    let srtp: OpenSSLSRTPTransform?
    var sequence = UInt16.random(in: 0...UInt16.max)
    var timestamp = UInt32.random(in: 0...UInt32.max)
    var afterGap = true
    var packets: UInt64 = 0
}

/// What a forward asks for: where, the payload type and SSRC to use, and SRTP keys if any.
public struct ForwarderRequest: Sendable {
    public let id: String
    public let destination: TransportAddress
    public let payloadType: UInt8
    public let ssrc: UInt32
    /// The master key ‖ salt to protect with (AES_CM_128_HMAC_SHA1_80 or AEAD_AES_128_GCM).
    public let srtp: SRTPKeyingMaterial?

    public init(id: String, destination: TransportAddress, payloadType: UInt8, ssrc: UInt32, srtp: SRTPKeyingMaterial?) {
        self.id = id
        self.destination = destination
        self.payloadType = payloadType
        self.ssrc = ssrc
        self.srtp = srtp
    }
}

/// A running forward as the API shows it.
public struct ForwarderSnapshot: Sendable, Equatable {
    public let id: String
    public let destination: TransportAddress
    public let payloadType: UInt8
    public let ssrc: UInt32
    public let secure: Bool
    public let packets: UInt64
}

extension RoomTaps {
    /// At most this many forwards per room.
    static let maxForwarders = 8

    mutating func addForwarder(_ request: ForwarderRequest) throws(RecordingError) {
        guard forwarders.count < Self.maxForwarders else { throw .unavailable("a room has at most \(Self.maxForwarders) forwards") }
        var srtp: OpenSSLSRTPTransform?
        if let keys = request.srtp {
            do { srtp = try OpenSSLSRTPTransform(keys) } catch { throw .unavailable("the SRTP key does not fit: \(error)") }
        }
        forwarders.append(MixForwarder(id: request.id, destination: request.destination, payloadType: request.payloadType,
                                       ssrc: request.ssrc, srtp: srtp))
    }

    @discardableResult
    mutating func removeForwarder(id: String) -> Bool {
        guard let index = forwarders.firstIndex(where: { $0.id == id }) else { return false }
        forwarders.remove(at: index)
        return true
    }

    var forwarderSnapshots: [ForwarderSnapshot] {
        forwarders.map { ForwarderSnapshot(id: $0.id, destination: $0.destination, payloadType: $0.payloadType,
                                           ssrc: $0.ssrc, secure: $0.srtp != nil, packets: $0.packets) }
    }

    /// At the end of each audio tick: the tick's full-mix packet to every forward.
    mutating func forwardTick(_ packet: [UInt8]?, into output: inout RoomOutput) {
        for index in forwarders.indices {
            forwarders[index].timestamp &+= 960
            guard let packet else {
                forwarders[index].afterGap = true
                continue
            }
            let forwarder = forwarders[index]
            let fields = RTPHeaderFields(marker: forwarder.afterGap, payloadType: PayloadType(masking: forwarder.payloadType),
                                         sequenceNumber: forwarder.sequence, timestamp: forwarder.timestamp,
                                         ssrc: SSRC(forwarder.ssrc))
            var datagram: [UInt8] = []
            guard (try? fields.serialize(into: &datagram)) != nil else { continue }
            datagram += packet
            if let srtp = forwarder.srtp, (try? srtp.protectRTP(&datagram)) == nil { continue }
            forwarders[index].sequence &+= 1
            forwarders[index].afterGap = false
            forwarders[index].packets &+= 1
            output.transmits.append((datagram, forwarder.destination))
        }
    }
}
