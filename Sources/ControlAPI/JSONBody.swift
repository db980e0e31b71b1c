import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Reading JSON request bodies and writing JSON responses, with the API's error codes.
enum JSONBody {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    /// True for `application/json` and any `+json` type, parameters ignored.
    static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let type = contentType.split(separator: ";").first.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        } ?? ""
        return type == "application/json" || (type.hasPrefix("application/") && type.hasSuffix("+json"))
    }

    /// The request body, at most `limit` bytes (413 beyond).
    static func bytes(_ request: inout Request, limit: Int) async throws -> ByteBuffer {
        do {
            return try await request.collectBody(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw APIError.payloadTooLarge(limit: limit)
        }
    }

    /// Decodes a JSON body; nil for an empty body when `optional`. 415 for another media type,
    /// 400 `invalidJson` for malformed JSON or wrong field types.
    static func decode<T: Decodable>(
        _ type: T.Type, _ request: inout Request, limit: Int = 64 * 1024, optional: Bool = false
    ) async throws -> T? {
        let body = try await bytes(&request, limit: limit)
        if body.readableBytes == 0 {
            if optional { return nil }
            throw APIError.badRequest("missingBody", "this request needs a JSON body")
        }
        guard isJSON(request.headers[.contentType]) else { throw APIError.unsupportedMediaType("application/json") }
        do {
            return try JSONDecoder().decode(T.self, from: Data(body.readableBytesView))
        } catch let error as DecodingError {
            throw APIError.badRequest("invalidJson", describe(error))
        }
    }

    static func describe(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, _): return "missing field \(key.stringValue)"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return "wrong type for field \(path)"
        case .dataCorrupted(let context):
            if let underlying = context.underlyingError as? APIError { return underlying.message }
            if context.codingPath.isEmpty { return "the body is not valid JSON" }
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return "invalid value for field \(path): \(context.debugDescription)"
        @unknown default: return "the body is not valid JSON"
        }
    }

    static func response(_ value: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:])
        -> Response
    {
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return raw(data, status: status, headers: headers)
    }

    static func raw(_ data: Data, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var headers = headers
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
