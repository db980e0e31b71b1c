import ChorusCore
import Foundation
import Hummingbird
import Logging
import NIOCore
import Storage

/// Per-request state: Hummingbird's core storage plus who is calling. `AuthenticationMiddleware`
/// fills `principal` from the Authorization header before any route runs.
public struct ChorusRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var principal: Principal?
    /// The client's IP address: the rate-limit key for anonymous requests.
    public let remoteAddress: String
    /// The request's connection: a stream watches it for the client going away.
    public let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress?.ipAddress ?? "unknown"
        channel = source.channel
    }

    /// Hard cap on any request body; routes apply their own, smaller limits.
    public var maxUploadSize: Int { ControlAPI.maxRequestBody }
}

/// Who made a request.
public enum Principal: Sendable {
    /// An application, by Basic auth or a signed request.
    case application(ApplicationRecord)
    /// A registered user of an application, by bearer access token.
    case user(ApplicationRecord, UserID)

    public var application: ApplicationRecord {
        switch self {
        case .application(let app), .user(let app, _): return app
        }
    }

    /// The key under which the rate limiter counts this principal's requests.
    var rateLimitKey: String {
        switch self {
        case .application(let app): return "app:" + app.key
        case .user(let app, let user): return "user:" + app.key + ":" + user.rawValue
        }
    }
}

extension ChorusRequestContext {
    /// The caller, or 401 when the request carried no credentials.
    func requirePrincipal() throws(APIError) -> Principal {
        guard let principal else { throw APIError.missingCredentials }
        return principal
    }

    /// The calling application, or 401 (no credentials) / 403 (a user token).
    func requireApplication() throws(APIError) -> ApplicationRecord {
        switch try requirePrincipal() {
        case .application(let app): return app
        case .user: throw APIError.applicationAuthRequired
        }
    }

    /// A validated path parameter, percent-decoded first (browsers send `=` as `%3D`).
    func parameter<T>(_ name: String, _ make: (String) throws(IdentifierError) -> T) throws(APIError) -> T {
        guard let decoded = (parameters.get(name) ?? "").removingPercentEncoding else {
            throw APIError.badRequest("invalidPath", "the path has a malformed percent-encoding")
        }
        return try validated(decoded, make)
    }
}

/// Validates client input with one of the `ChorusCore` rules; a violation is a 400 naming the rule.
func validated<T>(_ raw: String, _ make: (String) throws(IdentifierError) -> T) throws(APIError) -> T {
    do {
        return try make(raw)
    } catch {
        throw APIError.badRequest(error.code, error.description)
    }
}
