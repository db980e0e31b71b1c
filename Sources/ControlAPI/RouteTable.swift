import HTTPTypes
import Hummingbird

/// Remembers which methods each path serves so that the other methods on a known path answer
/// 405 with an `Allow` header (Hummingbird alone would answer 404).
struct RouteTable {
    private var methods: [String: Set<String>] = [:]
    private var order: [String] = []

    mutating func record(_ path: String, _ method: HTTPRequest.Method) {
        if methods[path] == nil { order.append(path) }
        methods[path, default: []].insert(method.rawValue)
    }

    func addMethodNotAllowed(to router: Router<ChorusRequestContext>) {
        let all: [HTTPRequest.Method] = [.get, .post, .put, .patch, .delete]
        for path in order {
            let allowed = methods[path] ?? []
            let allow = allowed.sorted().joined(separator: ", ")
            for method in all where !allowed.contains(method.rawValue) {
                router.on(RouterPath(path), method: method) { _, _ -> Response in
                    throw APIError(.methodNotAllowed, "methodNotAllowed", "this path allows \(allow)",
                                   headers: [.allow: allow])
                }
            }
        }
    }
}

extension RouterMethods where Context == ChorusRequestContext {
    /// Registers a route and records it in `table`.
    @discardableResult
    func route(
        _ table: inout RouteTable, _ method: HTTPRequest.Method, _ path: String,
        _ handler: @escaping @Sendable (Request, ChorusRequestContext) async throws -> Response
    ) -> Self {
        table.record(path, method)
        return on(RouterPath(path), method: method, use: handler)
    }
}
