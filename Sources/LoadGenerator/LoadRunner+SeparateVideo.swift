import ChorusCore
import DTLS
import Foundation
import NIOCore

extension LoadRunner {
    /// Video on a server that carries it apart from the participant's connection (Janus
    /// VideoRoom), after everyone joined the audio rooms: each member publishes its camera on a
    /// connection of its own; once those are up (a feed can be watched only then), each member
    /// watches up to `slots` of the others in its room, the ones after it in join order, all on
    /// one subscriber connection that the server offers and we answer.
    func joinSeparateVideo(_ video: any LoadSeparateVideoSignaling, context: DTLSContext, camera: LoadCamera)
        async throws
    {
        let members = try await onEveryShard(\.participants).flatMap { $0 }
        let feeds = await forEach(members) { member -> (ObjectIdentifier, UInt64)? in
            let connection = LoadParticipant(
                room: member.room, userId: member.userId, audio: nil, timeline: member.timeline, isBurstTalker: false,
                isProbe: false, dtlsContext: context, video: camera, role: .camera, owner: member)
            // Set by the publish callback, which `connect` runs (and finishes) before it returns.
            var feed: UInt64?
            do {
                try await self.connect(connection) { offer in
                    let published = try await video.publish(room: member.room, userId: member.userId, offer: offer)
                    feed = published.feed
                    return published.join
                }
            } catch {
                await self.noteFailure("\(member.userId) camera: \(error)")
            }
            return feed.map { (ObjectIdentifier(member), $0) }
        }
        let feedOf = Dictionary(feeds.compactMap { $0 }, uniquingKeysWith: { first, _ in first })
        try await awaitHandshakes()
        let watches = members.compactMap { member -> (LoadParticipant, [UInt64])? in
            let feeds = watched(by: member, among: members).compactMap { feedOf[ObjectIdentifier($0)] }
            return feeds.isEmpty ? nil : (member, feeds)
        }
        _ = await forEach(watches) { member, feeds in
            await self.subscribe(member, to: feeds, video: video, context: context)
        }
        try await awaitHandshakes()
    }

    /// The members whose cameras `member` watches: the next `slots` others in its room.
    private func watched(by member: LoadParticipant, among members: [LoadParticipant]) -> [LoadParticipant] {
        let room = members.filter { $0.room == member.room }
        guard let index = room.firstIndex(where: { $0 === member }), room.count > 1 else { return [] }
        let count = min(configuration.slots, room.count - 1)
        guard count > 0 else { return [] }
        return (1...count).map { room[(index + $0) % room.count] }
    }

    /// One subscriber connection for all of `member`'s watched feeds: the server's offer, our
    /// answer, then ICE as the controlled side.
    private func subscribe(_ member: LoadParticipant, to feeds: [UInt64], video: any LoadSeparateVideoSignaling,
                           context: DTLSContext) async {
        let connection = LoadParticipant(
            room: member.room, userId: member.userId, audio: nil, timeline: member.timeline, isBurstTalker: false,
            isProbe: false, dtlsContext: context, role: .subscriber, owner: member)
        do {
            let channel = try await bind(connection)
            let started = MediaTime.now()
            do {
                guard let port = channel.localAddress?.port else { throw LoadHTTP.Failure(description: "no local port") }
                let subscription = try await video.subscribe(room: member.room, feeds: feeds)
                let offer = try LoadSDP.parseAnswer(subscription.offer)
                let answer = try await channel.eventLoop.submit {
                    connection.answer(toOffer: subscription.offer, host: self.localHost, port: port)
                }.get()
                try await subscription.start(answer)
                try await begin(connection, on: channel, answer: offer, started: started, controlling: false,
                                hangUp: subscription.hangUp)
            } catch {
                try? await channel.close()
                throw error
            }
        } catch {
            await noteFailure("\(member.userId) watching feeds \(feeds): \(error)")
        }
    }

}
