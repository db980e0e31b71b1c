import ChorusCore
import Foundation
import Hummingbird

/// `POST /demo/token` body.
struct DemoTokenRequest: Decodable {
    var userId: String
}

extension ControlAPI {
    /// `POST /demo/token {"userId"}` → `{"accessToken", "userId", "expiresAt"}` for a user of the
    /// development application. Only with `chorus serve --demo`: it stands in for the application
    /// backend that would register users in a real deployment, so the web client can join
    /// without the application secret ever reaching the browser. Anyone who can reach the port
    /// gets a token, which is why the route exists only when asked for.
    func addDemoRoutes(_ router: Router<ChorusRequestContext>, _ routes: inout RouteTable, applicationKey: String) {
        router.route(&routes, .post, "/demo/token") { request, _ in
            var request = request
            guard let body = try await JSONBody.decode(DemoTokenRequest.self, &request) else {
                throw APIError.badRequest("missingBody", "this request needs a JSON body with a userId")
            }
            let userId = try validated(body.userId, UserID.init(validating:))
            return try await self.demoToken(userId: userId, applicationKey: applicationKey)
        }
    }

    /// Mints the token the registration route would give after a valid signature.
    private func demoToken(userId: UserID, applicationKey: String) async throws -> Response {
        let key = try validated(applicationKey, ApplicationKey.init(validating:))
        guard try await database.application(key: key.rawValue) != nil else {
            throw APIError(.serviceUnavailable, "demoUnavailable", "the development application is missing")
        }
        return JSONBody.response(issueAccessToken(userId: userId, applicationKey: key, at: now()))
    }
}
