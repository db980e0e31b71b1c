import AudioMixer
import ChorusCore
import ChorusTestSupport
import Foundation
import Testing

@testable import ControlAPI
@testable import Rooms

/// Every room event, as the API encodes it, against the schema the server publishes
/// (`GET /v1/openapi.yaml`, `RoomEvent` and the schemas its discriminator maps to): field by
/// field, both ways. Each event type has samples with every optional field it can carry and
/// with none; each sample must conform (no field the schema lacks, none it requires missing,
/// every value of its type), and every property a schema declares must be sent by some sample
/// of its types, so the document cannot promise what the server never says.
@Suite("Room events against the published schema")
struct RoomEventSchemaTests {
    static let ann = EventMember(callId: CallID(guid: "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"), userId: try? UserID(validating: "ann"))
    static let bob = EventMember(callId: CallID(guid: "1f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"), userId: try? UserID(validating: "bob"))

    /// Samples of one event type (an exhaustive switch: a new type must bring its samples).
    static func samples(of name: RoomEventName) throws -> [RoomEvent] {
        switch name {
        case .participantJoined:
            return [.participantJoined(ann, displayName: "Ann", headers: ["x-ticket": "42"]),
                    .participantJoined(bob, displayName: nil, headers: [:])]
        case .participantEstablished: return [.participantEstablished(ann, srtpProfile: "SRTP_AEAD_AES_128_GCM")]
        case .participantICERestarted: return [.participantICERestarted(ann)]
        case .participantEnded: return [.participantEnded(try fullEnd()), .participantEnded(departure())]
        case .audioMuted: return [.audioMuted(ann)]
        case .audioUnmuted: return [.audioUnmuted(ann)]
        case .videoPaused: return [.videoPaused(ann, reason: .request), .videoPaused(ann, reason: .inactive)]
        case .videoResumed: return [.videoResumed(ann)]
        case .videoSlots: return [.videoSlots(bob, slots: slots())]
        case .talkingStarted: return [.talkingStarted(ann)]
        case .talkingStopped: return [.talkingStopped(ann)]
        case .speakerDominant: return [.speakerDominant(ann), .speakerDominant(nil)]
        case .roomClosed: return [.roomClosed(roomId: try RoomID(validating: "standup"))]
        case .callQualityWarning:
            return [.callQualityWarning(QualityWarningEvent(member: ann, warning: "highPacketLoss", direction: "uplink",
                                                            value: 7, threshold: 5, mos: 3.9)),
                    .callQualityWarning(QualityWarningEvent(member: nil, warning: "overloadedRoom", direction: nil,
                                                            value: 12, threshold: 10, mos: nil))]
        case .callQualityRecovered:
            return [.callQualityRecovered(QualityRecoveryEvent(member: ann, warning: "highJitter", direction: "uplink",
                                                               durationSeconds: 4)),
                    .callQualityRecovered(QualityRecoveryEvent(member: nil, warning: "overloadedRoom", direction: nil,
                                                               durationSeconds: 3))]
        case .recordingFailed: return [.recordingFailed(recordingId: "rec-1", error: "disk full")]
        }
    }

    static func slots() -> [SlotAssignmentEvent] {
        var shown = SlotAssignmentEvent(slot: 0, mid: "1")
        shown.publisher = ann
        shown.layer = 1
        shown.rid = "h"
        shown.pausedForBandwidth = true
        return [shown, SlotAssignmentEvent(slot: 1, mid: "2")]
    }

    /// A call's end as a room reports it, its figures from the stages' own types (so the keys
    /// are the ones the server sends).
    static func fullEnd() throws -> CallEnd {
        var stage = AudioStage(mixedSpeakers: 3, encoding: AudioEncoding(), lanes: 1, laneRunner: SerialLanes())
        let opus = AudioFormat.opus(payloadType: 111)
        let connection = PlainRTPConnection(remote: TransportAddress(ipv4: "10.0.0.9", port: 4_000)!, rtcpSSRC: SSRC(9),
                                            now: .seconds(1))
        let handle = try stage.add(ann.callId, userId: try UserID(validating: "ann"),
                                   media: MemberMedia(audioIn: .init(format: opus, ssrc: SSRC(8)),
                                                      audioOut: .init(format: opus, ssrc: SSRC(9)), sendsAudio: true),
                                   connection: connection)
        var quality = CallQuality()
        for second in 1...4 {
            _ = quality.evaluate(CallQuality.Sample(packetsReceived: 50 * second, packetsLost: 10 * second, jitterMs: 80,
                                                    downlinkLossPercent: 9, roundTripMs: 500, jitterBufferDelayMs: 60,
                                                    secondsSinceAudio: 5, expectsAudio: true, secondsSinceVideo: 5))
        }
        var samples = EstimateSummary()
        samples.add(900_000)
        var end = CallEnd(member: ann, cause: .hungUp, established: true)
        end.media = MediaCounters()
        end.audio = stage.statistics(handle)
        end.video = VideoStatistics().fields
        end.slots = [SlotView(mid: "1", publisherCallId: bob.callId.rawValue, layer: 2, rid: "f", temporalLayer: 1,
                              paused: "bandwidth", maxHeight: 360)]
        end.downlink = DownlinkSummary(bitrate: 800_000, source: "transportCC", samples: samples, roundTripTimeMilliseconds: 40)
        end.quality = quality.summary
        return end
    }

    static func departure() -> CallEnd {
        var end = CallEnd(member: bob, cause: .nodeLost, established: false)
        end.nodeId = "node-b"
        return end
    }

    @Test func everyEventConformsToItsSchemaAndEverySchemaFieldIsSent() async throws {
        try await TestServer.with { server in
            let text = String(decoding: try await server.request("GET", "/v1/openapi.yaml", auth: nil).body, as: UTF8.self)
            let check = SchemaCheck(document: try YAMLSubset.parse(text))
            let schemas = check.resolve("#/components/schemas")?.object?.keys.sorted() ?? []
            #expect(schemas.count > 50, "schemas read: \(schemas)")
            let mapping = try #require(check.resolve("#/components/schemas/RoomEvent")?["discriminator"]?["mapping"]?.object)
            var sent: [String: Set<String>] = [:]
            for name in RoomEventName.allCases {
                let reference = try #require(mapping[name.rawValue]?.string, "no schema for \(name.rawValue)")
                let resolved = check.resolve(reference)
                let schema = try #require(resolved, "\(reference) not found")
                for event in try Self.samples(of: name) {
                    let json = RoomEventRecord(id: 7, time: Date(timeIntervalSince1970: 1_800_000_000), event: event).json()
                    let value = try DocumentValue(json: Data(json.utf8))
                    #expect(check.problems(value, schema: schema) == [], "\(name.rawValue): \(json)")
                    sent[reference, default: []].formUnion(value.object?.keys ?? [:].keys)
                }
            }
            for (reference, keys) in sent {
                let properties = check.resolve(reference)?["properties"]?.object
                let declared = Set(try #require(properties, "\(reference) has no properties").keys)
                #expect(declared == keys, "\(reference): declared but never sent \(declared.subtracting(keys)), sent but undeclared \(keys.subtracting(declared))")
            }
        }
    }

    /// The reader of the document is itself checked: a field of the wrong type, a field the
    /// schema lacks and a missing required one are each found.
    @Test func theCheckFindsWhatIsWrong() throws {
        let check = SchemaCheck(document: try YAMLSubset.parse("""
            components:
              schemas:
                Thing:
                  type: object
                  required: [id, kind]
                  additionalProperties: false
                  properties:
                    id: { type: integer, minimum: 0 }
                    kind: { type: string, enum: [a, b] }
                    tags:
                      type: array
                      items: { type: string }
            """))
        let schema = try #require(check.resolve("#/components/schemas/Thing"))
        #expect(check.problems(try DocumentValue(json: Data(#"{"id": 3, "kind": "a", "tags": ["x"]}"#.utf8)), schema: schema) == [])
        #expect(check.problems(try DocumentValue(json: Data(#"{"id": "3", "kind": "a"}"#.utf8)), schema: schema).count == 1)
        #expect(check.problems(try DocumentValue(json: Data(#"{"id": 3, "kind": "c", "extra": 1}"#.utf8)), schema: schema).count == 2)
        #expect(check.problems(try DocumentValue(json: Data(#"{"id": 3, "tags": [1]}"#.utf8)), schema: schema).count == 2)
    }
}
