import ChorusCore

/// A room's tunables, as the REST API accepts them. Each has a documented default and range;
/// `validate()` names the first value out of range so the API can answer 422 with that name.
public struct RoomSettings: Codable, Equatable, Sendable {
    /// Participants allowed at once (joins beyond it are refused `roomFull`).
    public var maxParticipants: Int
    /// Loudest speakers mixed per tick; bounds the number of Opus encodes per tick.
    public var mixedSpeakers: Int
    /// Most video slots a subscriber may receive.
    public var videoSlots: Int
    /// Whether a join may create this room implicitly (application setting, per room here).
    public static let defaults = RoomSettings(maxParticipants: 100, mixedSpeakers: 3, videoSlots: 9)

    public static let maxParticipantsRange = 1...10_000
    public static let mixedSpeakersRange = 1...16
    public static let videoSlotsRange = 0...25

    public init(maxParticipants: Int, mixedSpeakers: Int, videoSlots: Int) {
        self.maxParticipants = maxParticipants
        self.mixedSpeakers = mixedSpeakers
        self.videoSlots = videoSlots
    }

    /// A setting outside its range.
    public struct OutOfRange: Error, Equatable, Sendable {
        public let field: String
        public let range: ClosedRange<Int>
        public var message: String { "\(field) must be between \(range.lowerBound) and \(range.upperBound)" }
    }

    public func validate() throws(OutOfRange) {
        if !Self.maxParticipantsRange.contains(maxParticipants) {
            throw OutOfRange(field: "maxParticipants", range: Self.maxParticipantsRange)
        }
        if !Self.mixedSpeakersRange.contains(mixedSpeakers) {
            throw OutOfRange(field: "mixedSpeakers", range: Self.mixedSpeakersRange)
        }
        if !Self.videoSlotsRange.contains(videoSlots) {
            throw OutOfRange(field: "videoSlots", range: Self.videoSlotsRange)
        }
    }
}

/// Identifies a live room: rooms are scoped per application, so the same room ID may exist in
/// two applications without meeting.
public struct RoomKey: Hashable, Sendable, CustomStringConvertible {
    public let application: ApplicationKey
    public let room: RoomID

    public init(application: ApplicationKey, room: RoomID) {
        self.application = application
        self.room = room
    }

    public var description: String { "\(application)/\(room)" }
}
