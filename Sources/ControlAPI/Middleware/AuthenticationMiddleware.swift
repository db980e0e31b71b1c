import Auth
import ChorusCore
import Foundation
import HTTPTypes
import Hummingbird
import Storage

/// Resolves the Authorization header into a `Principal` for the routes behind it:
/// - `Basic base64(key:secret)` and `Application <key>:<signature>` (+ `x-timestamp`) name an
///   application;
/// - `Bearer <accessToken>` names a registered user.
/// A request without the header passes with no principal (routes decide whether they need one);
/// a header that is present but wrong is a 401 naming what was wrong.
struct AuthenticationMiddleware: RouterMiddleware {
    typealias Context = ChorusRequestContext
    let api: ControlAPI

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard let header = request.headers[.authorization] else {
            return try await next(request, context)
        }
        var request = request
        var context = context
        let (scheme, credentials) = Self.split(header)
        switch scheme {
        case "basic":
            context.principal = .application(try await basic(credentials))
        case "application":
            // The signature covers the body's MD5, so the body is collected (and kept) here.
            let body = try await request.collectBody(upTo: context.maxUploadSize)
            context.principal = .application(try await signed(credentials, request: request, body: body))
        case "bearer":
            context.principal = try await bearer(credentials)
        default:
            throw APIError.unauthorized("unsupportedAuthorization", "use Basic, Application or Bearer authorization")
        }
        return try await next(request, context)
    }

    static func split(_ header: String) -> (scheme: String, credentials: String) {
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard let space = trimmed.firstIndex(of: " ") else { return (trimmed.lowercased(), "") }
        return (trimmed[..<space].lowercased(), trimmed[space...].trimmingCharacters(in: .whitespaces))
    }

    static let invalidCredentials = APIError.unauthorized(
        "invalidCredentials", "the application key or secret is wrong")

    private func basic(_ credentials: String) async throws -> ApplicationRecord {
        guard let decoded = Base64.decode(credentials).flatMap({ String(validating: $0, as: UTF8.self) }),
              let colon = decoded.firstIndex(of: ":")
        else { throw APIError.unauthorized("malformedAuthorization", "Basic credentials must be base64(key:secret)") }
        let key = String(decoded[..<colon])
        let secret = String(decoded[decoded.index(after: colon)...])
        guard let app = try await api.application(key: key),
              constantTimeEquals(Array(secret.utf8), Array(app.secret.utf8))
        else { throw Self.invalidCredentials }
        return app
    }

    private func signed(_ credentials: String, request: Request, body: ByteBuffer) async throws -> ApplicationRecord {
        guard let colon = credentials.firstIndex(of: ":") else {
            throw APIError.unauthorized("malformedAuthorization", "signed credentials must be <key>:<signature>")
        }
        let key = String(credentials[..<colon])
        let signature = String(credentials[credentials.index(after: colon)...])
        guard let timestampName = HTTPField.Name("x-timestamp"),
              let timestamp = request.headers[timestampName]
        else { throw APIError.unauthorized("missingTimestamp", "signed requests need an x-timestamp header") }
        guard let app = try await api.application(key: key) else { throw Self.invalidCredentials }
        let signed = ApplicationRequestSignature(
            method: request.method.rawValue, body: body.readableBytesView,
            contentType: request.headers[.contentType] ?? "", timestamp: timestamp, path: request.uri.description)
        switch signed.verify(signature, secret: app.secret, now: api.now()) {
        case .valid: return app
        case .badSignature: throw APIError.unauthorized("invalidSignature", "the request signature does not verify")
        case .badTimestamp: throw APIError.unauthorized("invalidTimestamp", "x-timestamp must be ISO 8601")
        case .staleTimestamp:
            throw APIError.unauthorized("staleTimestamp", "x-timestamp is more than 15 minutes from the server's clock")
        }
    }

    private func bearer(_ token: String) async throws -> Principal {
        let claims: AccessTokenClaims
        do {
            claims = try api.tokens.verify(token, now: api.now())
        } catch .expired {
            throw APIError.unauthorized("tokenExpired", "the access token has expired; register again")
        } catch {
            throw APIError.unauthorized("invalidToken", "the access token is not valid")
        }
        guard let user = try? UserID(validating: claims.sub),
              let app = try await api.application(key: claims.app)
        else { throw APIError.unauthorized("invalidToken", "the access token is not valid") }
        return .user(app, user)
    }
}
