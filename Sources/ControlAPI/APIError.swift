import Foundation
import HTTPTypes
import Hummingbird

/// Every error the API returns: an HTTP status and a JSON body
/// `{"error": {"code": "<stable name>", "message": "<human text>"}}`. Handlers throw these;
/// `ErrorMiddleware` turns anything else into one so that no client ever sees a bare 500.
public struct APIError: Error, HTTPResponseError, Sendable, Equatable {
    public var status: HTTPResponse.Status
    public var code: String
    public var message: String
    public var headers: HTTPFields

    public init(_ status: HTTPResponse.Status, _ code: String, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        response()
    }

    func response() -> Response {
        var headers = self.headers
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: jsonBody()))
    }

    /// `{"error": {"code", "message"}}`.
    func jsonBody() -> ByteBuffer {
        struct Body: Encodable {
            struct Inner: Encodable { var code: String; var message: String }
            var error: Inner
        }
        let data = (try? JSONBody.encoder.encode(Body(error: .init(code: code, message: message)))) ?? Data()
        return ByteBuffer(bytes: data)
    }
}

extension APIError {
    static func badRequest(_ code: String, _ message: String) -> APIError { .init(.badRequest, code, message) }

    static func unauthorized(_ code: String, _ message: String) -> APIError {
        var headers = HTTPFields()
        headers[.wwwAuthenticate] = #"Basic realm="chorus", Bearer realm="chorus""#
        return .init(.unauthorized, code, message, headers: headers)
    }

    static let missingCredentials = unauthorized("missingCredentials", "this request needs an Authorization header")
    static let applicationAuthRequired = APIError(
        .forbidden, "applicationAuthRequired", "this request needs application credentials, not a user token")
    static let forbidden = APIError(.forbidden, "forbidden", "these credentials do not give access to this resource")
    static let roomNotFound = APIError(.notFound, "roomNotFound", "no open room with this roomId")
    static let callNotFound = APIError(.notFound, "callNotFound", "no call with this callId")
    static let draining = APIError(
        .serviceUnavailable, "draining", "the server is shutting down and takes no new rooms",
        headers: [.retryAfter: "5"])

    static func unsupportedMediaType(_ expected: String) -> APIError {
        .init(.unsupportedMediaType, "unsupportedMediaType", "the body must be \(expected)")
    }

    static func payloadTooLarge(limit: Int) -> APIError {
        .init(.contentTooLarge, "payloadTooLarge", "the body exceeds \(limit) bytes")
    }
}
