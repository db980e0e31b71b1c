import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

extension ControlAPI {
    /// The HTTP/1.1 server `chorus serve` runs the router on (and the API tests do):
    /// - framing errors met before a request reached the router (oversized headers, a
    ///   Content-Length sent with Transfer-Encoding or twice with different values, garbage)
    ///   are answered with the API's JSON error body by `HTTPFramingErrorHandler`, and counted;
    /// - a connection that sends nothing complete for `idleTimeout` is closed: a slowloris
    ///   client that dribbles a header byte at a time holds its socket that long and no longer.
    ///   Streams being answered (Server-Sent Events) are not idle;
    /// - past `connectionLimit` open connections, a new one is answered 503 and closed.
    public static func httpServer(idleTimeout: Duration?, connectionLimit: HTTPConnectionLimit? = nil) -> HTTPServerBuilder {
        var configuration = HTTP1Channel.Configuration(
            additionalChannelHandlers: (connectionLimit.map { [HTTPConnectionLimitHandler(limit: $0)] } ?? [])
                + [HTTPFramingErrorHandler()],
            idleTimeout: idleTimeout.map { TimeAmount($0) })
        configuration.httpDecoder = .init(maxHeaderFieldSize: maxHeaderBytes, maxHeaderListSize: maxHeaderBytes)
        return .http1(configuration: configuration)
    }
}

/// Answers an HTTP framing error that NIO's decoder raises while no request is being read or
/// answered on the connection, with the API's JSON error body (431 `headersTooLarge`, 400
/// `malformedContentLength`, …) and `Connection: close`, and counts it. Without it Hummingbird
/// answers a bare 400 with an empty body. While a request is in progress the error goes on to
/// the handler reading that request's body (`ErrorMiddleware` maps it), or, for a pipelined
/// request behind one still being answered, to Hummingbird's own 400.
///
/// After the answer only the sending side is closed, and the rest of the refused request is
/// read and dropped until the client closes (at most `lingerTime`): closing a socket with
/// unread input sends a reset, which can destroy the answer before the client reads it.
final class HTTPFramingErrorHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    static let lingerTime = TimeAmount.seconds(2)

    /// Request heads read minus responses finished: zero when the connection is idle.
    private var open = 0
    private var answered = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { open += 1 }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { open -= 1 }
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Once answered, the decoder reports every later read as data in its error state: the
        // rest of the refused request, dropped with it.
        if answered { return }
        guard let parserError = error as? HTTPParserError, open == 0 else {
            context.fireErrorCaught(error)
            return
        }
        answered = true
        let apiError = ErrorMiddleware.parserError(parserError)
        APIMetrics.countError(code: apiError.code)
        let body = apiError.jsonBody()
        var headers = apiError.headers
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.contentLength] = String(body.readableBytes)
        headers[.connection] = "close"
        context.write(wrapOutboundOut(.head(HTTPResponse(status: apiError.status, headerFields: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            context.close(mode: .output, promise: nil)
        }
        context.eventLoop.assumeIsolated().scheduleTask(in: Self.lingerTime) { context.close(promise: nil) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if answered, case ChannelEvent.inputClosed = event { context.close(promise: nil) }
        context.fireUserInboundEventTriggered(event)
    }
}
