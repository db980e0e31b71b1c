import Auth
import ChorusCore
import Foundation
import Hummingbird
import Storage

/// `POST /v1/users/{userId}/registrations` body. `sequence` may be a JSON string or integer.
struct RegistrationRequest: Decodable {
    var applicationKey: String
    var sequence: String
    var signature: String

    enum CodingKeys: String, CodingKey { case applicationKey, sequence, signature }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        applicationKey = try c.decode(String.self, forKey: .applicationKey)
        signature = try c.decode(String.self, forKey: .signature)
        if let number = try? c.decode(UInt64.self, forKey: .sequence) {
            sequence = String(number)
        } else {
            sequence = try c.decode(String.self, forKey: .sequence)
        }
    }
}

struct RegistrationResponse: Encodable {
    var userId: String
    var accessToken: String
    var expiresAt: Date
}

extension ControlAPI {
    /// User registration by the Sinch signature scheme. No Authorization header: the signature
    /// over (userId, applicationKey, sequence, secret) is the credential, and the strictly
    /// increasing sequence (committed durably before the answer) makes each one single-use.
    func addRegistrationRoutes(_ router: Router<ChorusRequestContext>, _ routes: inout RouteTable) {
        router.route(&routes, .post, "/v1/users/{userId}/registrations") { request, context in
            var request = request
            let userId = try context.parameter("userId", UserID.init(validating:))
            guard let body = try await JSONBody.decode(RegistrationRequest.self, &request) else {
                throw APIError.badRequest("missingBody", "this request needs a JSON body")
            }
            return try await self.register(userId: userId, body)
        }
    }

    private func register(userId: UserID, _ body: RegistrationRequest) async throws -> Response {
        let key = try validated(body.applicationKey, ApplicationKey.init(validating:))
        let sequence = try validated(body.sequence, RegistrationSequence.init(validating:))
        guard let app = try await database.application(key: key.rawValue), let appId = app.id,
              RegistrationSignature.verify(body.signature, userId: userId, applicationKey: key,
                                           sequence: sequence, applicationSecret: app.secret)
        else {
            metrics.registrationsRefused.increment()
            throw APIError.unauthorized("invalidSignature", "the registration signature does not verify")
        }
        let now = now()
        let outcome = try await database.acceptRegistrationSequence(
            applicationId: appId, userId: userId.rawValue, sequence: sequence.decimal, at: now)
        if case .replayed(let last) = outcome {
            metrics.registrationsReplayed.increment()
            throw APIError(.conflict, "sequenceReplayed",
                           "sequence must be greater than the last accepted one (\(last))")
        }
        metrics.registrationsAccepted.increment()
        return JSONBody.response(issueAccessToken(userId: userId, applicationKey: key, at: now), status: .created)
    }

    /// A fresh access token for `userId` of the application `applicationKey`. Shared by the
    /// registration route and the `--demo` token route, so both hand out identical credentials.
    func issueAccessToken(userId: UserID, applicationKey key: ApplicationKey, at now: Date) -> RegistrationResponse {
        let claims = AccessTokenClaims(userId: userId, applicationKey: key, issuedAt: now,
                                       lifetime: configuration.tokenLifetime,
                                       tokenId: ApplicationCredentials.newCallID().rawValue)
        return RegistrationResponse(
            userId: userId.rawValue, accessToken: tokens.sign(claims),
            expiresAt: Date(timeIntervalSince1970: TimeInterval(claims.exp)))
    }
}
