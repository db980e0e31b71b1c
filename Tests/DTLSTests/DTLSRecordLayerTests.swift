import ChorusCore
import ChorusTestSupport
import DTLS
import Testing

/// The record layer checks that run before OpenSSL sees a datagram, on real flights (a
/// Chromium-style ClientHello and an OpenSSL server flight from the committed fuzz corpus).
@Suite("DTLS record layer (RFC 6347 §4.1, §4.2.2)")
struct DTLSRecordLayerTests {
    func clientHello() throws -> [UInt8] {
        try #require(try Fixtures.fuzzDatagrams("Fuzz/Corpus/FuzzDTLS/server-client-hello").first)
    }

    @Test func aRealClientHelloFrames() throws {
        let layer = try DTLSRecordLayer(parsing: try clientHello())
        #expect(layer.records.count == 1)
        let record = try #require(layer.records.first)
        #expect(record.header.contentType == .handshake)
        #expect(record.header.epoch == 0)
        #expect(record.header.version == 0xFEFF)
        let handshake = try DTLSHandshakeHeader(parsing: try clientHello()[record.fragment])
        #expect(handshake.messageType == 1)  // client_hello
        #expect(handshake.fragmentOffset == 0)
        #expect(handshake.fragmentLength == handshake.messageLength)
    }

    @Test func aServerFlightHoldsSeveralRecordsInOneDatagram() throws {
        let flight = try Fixtures.fuzzDatagrams("Fuzz/Corpus/FuzzDTLS/client-server-flight")
        let layers = try flight.map { try DTLSRecordLayer(parsing: $0) }
        #expect(layers.contains { $0.records.count > 1 } || layers.count > 1)
        #expect(layers.flatMap(\.records).allSatisfy { $0.header.version == 0xFEFD || $0.header.version == 0xFEFF })
    }

    @Test func everyTruncationIsRefused() throws {
        for prefix in truncations(of: try clientHello()) {
            #expect(throws: DTLSRecordError.self) { try DTLSRecordLayer(parsing: prefix) }
        }
    }

    @Test func trailingBytesMismatchedLengthsAndUnknownTypesAreRefused() throws {
        let hello = try clientHello()
        #expect(throws: DTLSRecordError.truncated) { try DTLSRecordLayer(parsing: hello + [0x16]) }
        var wrongType = hello
        wrongType[0] = 24  // heartbeat: not used by WebRTC
        #expect(throws: DTLSRecordError.unknownContentType(24)) { try DTLSRecordLayer(parsing: wrongType) }
        var wrongVersion = hello
        wrongVersion[2] = 0x03  // 0xFE03
        #expect(throws: DTLSRecordError.unsupportedVersion(0xFE03)) { try DTLSRecordLayer(parsing: wrongVersion) }
        var huge = hello
        huge[11] = 0xFF
        huge[12] = 0xFF
        #expect(throws: DTLSRecordError.fragmentTooLong(65_535)) { try DTLSRecordLayer(parsing: huge) }
        // A handshake fragment claiming to reach past its message.
        var outOfRange = hello
        outOfRange[13 + 8] = outOfRange[13 + 8] &+ 1  // fragment_offset low byte
        #expect(throws: DTLSRecordError.fragmentOutOfRange) { try DTLSRecordLayer(parsing: outOfRange) }
        #expect(throws: DTLSRecordError.empty) { try DTLSRecordLayer(parsing: []) }
    }

    @Test func twoRecordsBackToBackAndAUnifiedHeaderTail() throws {
        let alert: [UInt8] = [21, 0xFE, 0xFD, 0, 1, 0, 0, 0, 0, 0, 7, 0, 2, 1, 0]
        let layer = try DTLSRecordLayer(parsing: alert + alert)
        #expect(layer.records.map(\.header.sequenceNumber) == [7, 7])
        // RFC 9147 unified header (first byte 001CSLEE): passed through unparsed.
        let withUnified = try DTLSRecordLayer(parsing: alert + [0x2F, 0x01, 0x02, 0x03])
        #expect(withUnified.records.count == 1)
        #expect(withUnified.unifiedRecords == 1)
    }

    @Test func theEndpointDropsWhatDoesNotFrameAndStillHandshakes() throws {
        let server = try DTLSEndpoint(context: try DTLSContext(certificate: DTLSCertificate()), role: .server,
                                      remoteFingerprints: [])
        let dropped = server.handle([22, 0xFE, 0xFD, 0, 0], now: .seconds(1))
        #expect(dropped.malformed == .truncated)
        #expect(dropped.datagrams.isEmpty)
        let answered = server.handle(try clientHello(), now: .seconds(1))
        #expect(answered.malformed == nil)
        #expect(!answered.datagrams.isEmpty, "a real ClientHello gets the server's flight")
    }
}
