import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Rooms

extension ControlAPI {
    /// Seconds between SSE keep-alive comments, so proxies keep an idle stream open.
    static let keepAliveSeconds: UInt64 = 15

    /// `GET /v1/rooms/{roomId}/events`: Server-Sent Events, for the application or a user who is
    /// in the room. `Last-Event-ID` resumes from the room's buffer of recent events. A stored
    /// open room that no node holds (its node was lost) is placed, so a listener that
    /// reconnects finds the room again, and with it the calls the lost node took along.
    func addEventRoutes(_ group: RouterGroup<ChorusRequestContext>, _ routes: inout RouteTable) {
        group.route(&routes, .get, "/v1/rooms/{roomId}/events") { request, context in
            let (_, room) = try await self.liveRoom(context, userMayRead: true, placing: true)
            let lastID = HTTPField.Name("last-event-id").flatMap { request.headers[$0] }.flatMap { UInt64($0) }
            let (replay, live) = await room.subscribe(after: lastID)
            let (items, continuation) = Self.withKeepAlive(live)
            // The server allows half-closed connections, so a client that closes its socket is
            // only noticed by the next failed write (a keep-alive, up to 15 s later): until then
            // its descriptor and subscription stay. The watcher ends the stream at once instead.
            // It is in place before the head of the answer leaves: a client that closes after
            // seeing the head is always noticed.
            let channel = context.channel
            let watcher = ClientGoneWatcher { continuation.finish() }
            try? await channel.pipeline.addHandler(watcher, position: .first).get()
            let body = ResponseBody { writer in
                do {
                    for event in replay { try await writer.write(Self.frame(event)) }
                    for await item in items {
                        switch item {
                        case .event(let event): try await writer.write(Self.frame(event))
                        case .keepAlive: try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                        }
                    }
                    try await writer.finish(nil)
                } catch {
                    continuation.finish()
                    _ = try? await channel.pipeline.removeHandler(watcher).get()
                    throw error
                }
                _ = try? await channel.pipeline.removeHandler(watcher).get()
            }
            return Response(status: .ok, headers: [
                .contentType: "text/event-stream", .cacheControl: "no-cache",
            ], body: body)
        }
    }

    static func frame(_ event: RoomEventRecord) -> ByteBuffer {
        ByteBuffer(string: "id: \(event.id)\nevent: \(event.name.rawValue)\ndata: \(event.json())\n\n")
    }

    enum StreamItem: Sendable {
        case event(RoomEventRecord)
        case keepAlive
    }

    /// The room's events with a keep-alive tick merged in; ends when the room's stream ends or
    /// when the returned continuation is finished (the client went away).
    static func withKeepAlive(_ live: AsyncStream<RoomEventRecord>)
        -> (AsyncStream<StreamItem>, AsyncStream<StreamItem>.Continuation)
    {
        let (merged, continuation) = AsyncStream.makeStream(of: StreamItem.self)
        let forward = Task {
            for await event in live { continuation.yield(.event(event)) }
            continuation.finish()
        }
        let ticks = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(Int(keepAliveSeconds)))
                continuation.yield(.keepAlive)
            }
        }
        continuation.onTermination = { _ in
            forward.cancel()
            ticks.cancel()
        }
        return (merged, continuation)
    }
}

/// Sits first in a streaming response's pipeline and calls `clientGone` when the client closes
/// its side of the connection (end of input) or the connection drops, passing every event on.
final class ClientGoneWatcher: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = NIOAny
    let clientGone: @Sendable () -> Void

    init(clientGone: @escaping @Sendable () -> Void) {
        self.clientGone = clientGone
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { clientGone() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        clientGone()
        context.fireChannelInactive()
    }
}
