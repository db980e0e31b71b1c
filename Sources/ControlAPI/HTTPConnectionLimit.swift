import HTTPTypes
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Bounds the HTTP connections open at once. A flood of connections would otherwise take every
/// descriptor the process has, and running out is fatal on Linux (Dispatch kills the process
/// when it cannot open `/proc/<tid>/stat`; see `DescriptorLimit` in MediaSocket). Past the
/// limit a new connection is answered at once with 503 `tooManyConnections` (JSON, `Connection:
/// close`, `Retry-After: 1`) and closed, so it costs its descriptor only for that moment.
///
/// One `HTTPConnectionLimit` per server, shared by every connection's
/// `HTTPConnectionLimitHandler` (an `Atomic` count: `Sendable` without a lock).
public final class HTTPConnectionLimit: Sendable {
    public let maximum: Int
    private let open = Atomic<Int>(0)

    public init(maximum: Int) {
        self.maximum = max(maximum, 1)
    }

    /// Connections open now.
    public var count: Int { open.load(ordering: .relaxed) }

    /// Counts a new connection; false (and not counted) when the limit is reached.
    func admit() -> Bool {
        var current = open.load(ordering: .relaxed)
        while current < maximum {
            let (exchanged, original) = open.compareExchange(
                expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    func release() {
        open.subtract(1, ordering: .relaxed)
    }
}

/// The per-connection side of `HTTPConnectionLimit`: admits the connection when it becomes
/// active, or answers 503 and closes it; releases its place when it closes.
final class HTTPConnectionLimitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let limit: HTTPConnectionLimit
    private var admitted = false
    private var refused = false

    init(limit: HTTPConnectionLimit) {
        self.limit = limit
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { check(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        if !admitted && !refused { check(context: context) }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if admitted {
            admitted = false
            limit.release()
        }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if refused { return }  // nothing of a refused connection reaches the router
        context.fireChannelRead(data)
    }

    private func check(context: ChannelHandlerContext) {
        if limit.admit() {
            admitted = true
            return
        }
        refused = true
        let error = APIError(.serviceUnavailable, "tooManyConnections",
                             "the server holds \(limit.maximum) HTTP connections; retry shortly")
        APIMetrics.countError(code: error.code)
        let body = error.jsonBody()
        var headers = error.headers
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.contentLength] = String(body.readableBytes)
        headers[.connection] = "close"
        headers[.retryAfter] = "1"
        context.write(wrapOutboundOut(.head(HTTPResponse(status: error.status, headerFields: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }
}
