import HTTPTypes
import Hummingbird

/// Cross-origin access for browser clients of a cluster: a page loaded from one node follows a
/// `307` to the node that runs its room, which is another origin, and talks to that node from
/// then on. The API authenticates with the Authorization header only (no cookies), so letting
/// any origin call it gives a page nothing it did not already hold; the preflight answers
/// itself (204) before routing, and every answer names the headers a page may read.
struct CORSMiddleware: RouterMiddleware {
    typealias Context = ChorusRequestContext
    static let allowedHeaders = "Authorization, Content-Type, Last-Event-ID, Idempotency-Key, x-timestamp"
    static let exposedHeaders = "Location, Retry-After, x-request-id"

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard request.headers[.origin] != nil else { return try await next(request, context) }
        if request.method == .options, request.headers[.accessControlRequestMethod] != nil {
            return Response(status: .noContent, headers: [
                .accessControlAllowOrigin: "*",
                .accessControlAllowMethods: "GET, POST, PATCH, DELETE",
                .accessControlAllowHeaders: Self.allowedHeaders,
                .accessControlMaxAge: "600",
            ])
        }
        var response = try await next(request, context)
        response.headers[.accessControlAllowOrigin] = "*"
        response.headers[.accessControlExposeHeaders] = Self.exposedHeaders
        return response
    }
}
