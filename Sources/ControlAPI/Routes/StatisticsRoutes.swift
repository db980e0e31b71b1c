import Auth
import Foundation
import HTTPTypes
import Hummingbird
import Storage

/// The answer to an upload.
struct StatisticsReceipt: Encodable {
    var statisticsId: String
    var receivedAt: Date
}

extension ControlAPI {
    /// Largest statistics upload accepted.
    static let maxStatisticsBody = 256 * 1024

    /// Client statistics uploaded at call end, as the SDK does: any JSON object, stored verbatim,
    /// acknowledged only after the row is committed; an `Idempotency-Key` makes retries safe.
    func addStatisticsRoutes(_ group: RouterGroup<ChorusRequestContext>, _ routes: inout RouteTable) {
        group.route(&routes, .post, "/v1/calls/{callId}/statistics") { request, context in
            var request = request
            let call = try await self.accessibleCall(context)
            return try await self.storeStatistics(&request, call: call, principal: try context.requirePrincipal())
        }
        group.route(&routes, .get, "/v1/calls/{callId}/statistics") { _, context in
            let call = try await self.accessibleCall(context)
            return JSONBody.raw(Self.statisticsList(try await self.database.statistics(callId: call.callId)))
        }
    }

    private func storeStatistics(_ request: inout Request, call: CallRecord, principal: Principal) async throws
        -> Response
    {
        guard JSONBody.isJSON(request.headers[.contentType]) else {
            throw APIError.unsupportedMediaType("application/json")
        }
        let body = try await JSONBody.bytes(&request, limit: Self.maxStatisticsBody)
        let text = try Self.jsonObjectText(body)
        let idempotencyKey = try Self.idempotencyKey(request.headers)
        let uploadedBy: String
        switch principal {
        case .application: uploadedBy = "application"
        case .user(_, let user): uploadedBy = "user:" + user.rawValue
        }
        let record = CallStatisticsRecord(
            statisticsId: ApplicationCredentials.newCallID().rawValue, callId: call.callId, uploadedBy: uploadedBy,
            idempotencyKey: idempotencyKey, bodySHA256: Digest.sha256(Array(text.utf8)).hexString, body: text,
            receivedAt: now())
        switch try await database.insertStatistics(record) {
        case .created(let stored):
            metrics.statisticsStored.increment()
            return JSONBody.response(StatisticsReceipt(statisticsId: stored.statisticsId, receivedAt: stored.receivedAt),
                                     status: .created)
        case .replayed(let stored):
            return JSONBody.response(StatisticsReceipt(statisticsId: stored.statisticsId, receivedAt: stored.receivedAt),
                                     status: .created, headers: [HTTPField.Name("idempotent-replayed")!: "true"])
        case .keyReusedWithDifferentBody:
            throw APIError(.unprocessableContent, "idempotencyKeyReused",
                           "this Idempotency-Key was used with a different body")
        }
    }

    /// The body as UTF-8 text when it is one JSON object; 400 otherwise.
    static func jsonObjectText(_ body: ByteBuffer) throws -> String {
        guard body.readableBytes > 0 else { throw APIError.badRequest("missingBody", "statistics must be a JSON object") }
        guard let text = String(validating: body.readableBytesView, as: UTF8.self) else {
            throw APIError.badRequest("invalidJson", "the body must be UTF-8 JSON")
        }
        switch StrictJSON.classify(Array(body.readableBytesView)) {
        case .object: break
        case .notAnObject: throw APIError.badRequest("notAnObject", "statistics must be a JSON object")
        case .invalid: throw APIError.badRequest("invalidJson", "the body is not valid JSON (RFC 8259)")
        }
        return text
    }

    /// The optional Idempotency-Key header: 1–255 printable ASCII characters.
    static func idempotencyKey(_ headers: HTTPFields) throws -> String? {
        guard let name = HTTPField.Name("idempotency-key"), let key = headers[name] else { return nil }
        guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else {
            throw APIError.badRequest("invalidIdempotencyKey", "Idempotency-Key must be 1 to 255 printable characters")
        }
        return key
    }

    /// `{"statistics": [...]}` with each stored body spliced in verbatim, so numbers keep every
    /// digit the client sent (a round trip through Double would not). Bodies were validated as
    /// JSON objects on the way in; the other fields are GUIDs, dates and URL-safe IDs.
    static func statisticsList(_ records: [CallStatisticsRecord]) -> Data {
        let items = records.map { record -> String in
            let meta = JSONBody.encoder.encode(string: record.statisticsId)
            let by = JSONBody.encoder.encode(string: record.uploadedBy)
            let at = JSONBody.encoder.encode(string: ISO8601DateFormatter().string(from: record.receivedAt))
            return #"{"statisticsId":\#(meta),"uploadedBy":\#(by),"receivedAt":\#(at),"data":\#(record.body)}"#
        }
        return Data((#"{"statistics":["# + items.joined(separator: ",") + "]}").utf8)
    }
}

extension JSONEncoder {
    /// A JSON string literal for `string`, escaped by the encoder.
    func encode(string: String) -> String {
        (try? encode(string)).map { String(decoding: $0, as: UTF8.self) } ?? "\"\""
    }
}

extension Array where Element == UInt8 {
    var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(count * 2)
        for byte in self {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
