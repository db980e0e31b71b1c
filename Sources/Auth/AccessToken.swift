import ChorusCore
import Foundation

/// What an access token says: who the user is, for which application, and until when.
public struct AccessTokenClaims: Codable, Equatable, Sendable {
    /// Issuer, always "chorus".
    public var iss: String
    /// Subject: the user ID.
    public var sub: String
    /// The application key the user registered with.
    public var app: String
    /// Issued-at and expiry, seconds since 1970 (RFC 7519 NumericDate).
    public var iat: Int64
    public var exp: Int64
    /// Unique token id, for logs.
    public var jti: String

    public init(userId: UserID, applicationKey: ApplicationKey, issuedAt: Date, lifetime: TimeInterval,
                tokenId: String) {
        iss = "chorus"
        sub = userId.rawValue
        app = applicationKey.rawValue
        iat = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        exp = iat + Int64(lifetime)
        jti = tokenId
    }
}

/// Compact JWS access tokens (RFC 7519) signed with HMAC-SHA256 (RFC 7518 §3.2) under the
/// server's token key. Verification is strict on purpose: the header must name exactly
/// `alg: HS256` (never `none`, never another algorithm), the signature is compared in constant
/// time before any claim is trusted, and `exp` is checked against the caller's clock.
public struct AccessTokenSigner: Sendable {
    private let key: [UInt8]

    public init(key: [UInt8]) {
        precondition(key.count >= 32, "token key must be at least 256 bits")
        self.key = key
    }

    /// Why a presented token was refused.
    public enum Failure: Error, Equatable, Sendable {
        case malformed, badSignature, expired, wrongIssuer
    }

    public func sign(_ claims: AccessTokenClaims) -> String {
        let header = #"{"alg":"HS256","typ":"JWT"}"#
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding a struct of strings and integers cannot fail.
        let payload = (try? encoder.encode(claims)) ?? Data()
        let signingInput = Base64.urlEncode(Array(header.utf8)) + "." + Base64.urlEncode(payload)
        return signingInput + "." + Base64.urlEncode(mac(signingInput))
    }

    /// The claims of a valid, unexpired token; throws `Failure` for anything else.
    public func verify(_ token: String, now: Date) throws(Failure) -> AccessTokenClaims {
        guard token.utf8.count <= 4096 else { throw .malformed }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
              let headerBytes = Base64.urlDecode(parts[0]),
              let payloadBytes = Base64.urlDecode(parts[1]),
              let signature = Base64.urlDecode(parts[2])
        else { throw .malformed }
        guard let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)),
              header.alg == "HS256"
        else { throw .malformed }
        guard constantTimeEquals(signature, mac(parts[0] + "." + parts[1])) else { throw .badSignature }
        guard let claims = try? JSONDecoder().decode(AccessTokenClaims.self, from: Data(payloadBytes))
        else { throw .malformed }
        guard claims.iss == "chorus" else { throw .wrongIssuer }
        guard Double(claims.exp) > now.timeIntervalSince1970 else { throw .expired }
        return claims
    }

    private struct Header: Decodable {
        var alg: String
    }

    private func mac(_ signingInput: some StringProtocol) -> [UInt8] {
        Digest.hmacSHA256(key: key, data: Array(signingInput.utf8))
    }
}
