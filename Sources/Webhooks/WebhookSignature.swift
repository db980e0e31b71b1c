import Auth
import Foundation

/// Standard Webhooks signing: the signed content is `id.timestamp.body`, the signature
/// `v1,<base64 HMAC-SHA256>` with the endpoint's key (its secret is "whsec_" + base64 of the key).
/// The dispatcher signs each attempt; the API makes endpoints' secrets.
public enum WebhookSignature {
    static let secretPrefix = "whsec_"

    /// A new endpoint secret: 24 random bytes (the standard's minimum), "whsec_" + base64.
    public static func newSecret() -> String {
        secretPrefix + Base64.encode(SecureRandom.bytes(24))
    }

    /// The three headers of one attempt.
    public static func headers(id: String, timestamp: Int, body: [UInt8], secret: String) -> [(String, String)] {
        [("webhook-id", id), ("webhook-timestamp", String(timestamp)),
         ("webhook-signature", sign(id: id, timestamp: timestamp, body: body, secret: secret))]
    }

    public static func sign(id: String, timestamp: Int, body: [UInt8], secret: String) -> String {
        let key = Base64.decode(String(secret.dropFirst(secretPrefix.count))) ?? Array(secret.utf8)
        let content = Array("\(id).\(timestamp).".utf8) + body
        return "v1," + Base64.encode(Digest.hmacSHA256(key: key, data: content))
    }
}
