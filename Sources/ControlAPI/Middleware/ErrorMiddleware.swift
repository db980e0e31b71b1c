import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import Storage

/// The outermost middleware: turns every error a handler or an inner middleware throws into an
/// `APIError` JSON response, so bad input never becomes a 500 with an empty body, and stamps
/// each response with the request id that also appears in the logs.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = ChorusRequestContext
    let metrics: APIMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let redirect as RoomElsewhere {
            response = redirect.response(for: request)
        } catch {
            let apiError = Self.apiError(for: error)
            if apiError.status == .internalServerError {
                context.logger.error("unhandled error", metadata: ["error": "\(error)"])
            } else {
                context.logger.debug("request refused", metadata: ["code": "\(apiError.code)"])
            }
            metrics.countError(code: apiError.code)
            response = apiError.response()
        }
        if let name = HTTPField.Name("x-request-id") {
            response.headers[name] = context.id
        }
        return response
    }

    static func apiError(for error: any Error) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case let error as StorageError:
            return storageError(error)
        case is NIOTooManyBytesError:
            return .payloadTooLarge(limit: ControlAPI.maxRequestBody)
        case let error as HTTPParserError:
            return parserError(error)
        case is DecodingError:
            return .badRequest("invalidJson", "the body is not the JSON this endpoint takes")
        case let error as HTTPError:
            return httpError(error)
        case let error as any HTTPResponseError:
            return APIError(error.status, "httpError", error.status.reasonPhrase)
        default:
            return APIError(.internalServerError, "internal", "the server failed to handle this request")
        }
    }

    static func storageError(_ error: StorageError) -> APIError {
        switch error {
        case .conflict(let what): return APIError(.conflict, "conflict", "conflicts with stored data: \(what)")
        case .notFound(let what): return APIError(.notFound, "notFound", "not found: \(what)")
        case .invalidPageToken: return .badRequest("invalidPageToken", "pageToken was not issued by this server")
        case .unavailable:
            return APIError(.serviceUnavailable, "storageUnavailable", "storage is busy; retry shortly",
                            headers: [.retryAfter: "1"])
        }
    }

    /// The client's framing mistake that NIO's decoder met while a handler read the body (a
    /// chunk size that is not hex or overflows, a body cut short by the client's close): the
    /// client's fault, so a 400 naming it, never a 500. Errors before any request was read
    /// (oversized headers, conflicting lengths) are answered by `HTTPFramingErrorHandler`.
    static func parserError(_ error: HTTPParserError) -> APIError {
        switch error {
        case .headerOverflow:
            return APIError(.requestHeaderFieldsTooLarge, "headersTooLarge",
                            "the request headers exceed \(ControlAPI.maxHeaderBytes) bytes")
        case .invalidEOFState, .closedConnection:
            return .badRequest("incompleteBody", "the connection ended before the request body did")
        case .invalidChunkSize:
            return .badRequest("malformedChunk", "a chunk size of the chunked body is not a valid hexadecimal size")
        case .invalidContentLength, .unexpectedContentLength:
            return .badRequest("malformedContentLength",
                               "Content-Length is invalid or repeated with another value")
        case .unknown:
            // What llhttp reports for, among others, Content-Length sent with Transfer-Encoding.
            return .badRequest("malformedRequest", "the request's framing or headers are not valid HTTP/1.1")
        default:
            return .badRequest("malformedRequest", "the request is not valid HTTP/1.1: \(error)")
        }
    }

    static func httpError(_ error: HTTPError) -> APIError {
        switch error.status {
        case .notFound: return APIError(.notFound, "notFound", "no such endpoint")
        case .contentTooLarge: return .payloadTooLarge(limit: ControlAPI.maxRequestBody)
        default: return APIError(error.status, "httpError", error.body ?? error.status.reasonPhrase)
        }
    }
}
