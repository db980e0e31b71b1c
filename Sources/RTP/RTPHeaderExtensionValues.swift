/// The client-to-mixer audio level of RFC 6464 (`urn:ietf:params:rtp-hdrext:ssrc-audio-level`):
/// one byte `|V|level(7)|`, where V is the sender's voice-activity flag and level is the
/// packet's audio level in -dBov (0 is loudest, 127 is silence). The mixer reads it to pick its
/// top-N speakers without decoding; it is also written on the mixed stream.
public struct AudioLevelIndication: Sendable, Equatable {
    public let voiceActivity: Bool
    /// -dBov, 0…127.
    public let level: UInt8

    /// `level` above 127 is clamped to 127 (silence), the field's floor.
    public init(voiceActivity: Bool, level: UInt8) {
        self.voiceActivity = voiceActivity
        self.level = min(level, 127)
    }

    /// nil when `data` is empty. Only the first byte counts; RFC 6464 allows padding after it.
    public init?(data: ArraySlice<UInt8>) {
        guard let byte = data.first else { return nil }
        self.init(voiceActivity: byte & 0x80 != 0, level: byte & 0x7F)
    }

    public var byte: UInt8 { (voiceActivity ? 0x80 : 0) | level }
}

/// The mixer-to-client audio levels of RFC 6465 (`urn:ietf:params:rtp-hdrext:csrc-audio-level`):
/// one byte `|0|level(7)|` per CSRC, in the order of the packet's CSRC list. Chorus writes it on
/// the mixed stream so clients can show who is talking; reading it is a view over the bytes.
public struct CSRCAudioLevels: RandomAccessCollection, Sendable, Equatable {
    let bytes: ArraySlice<UInt8>

    public init(data: ArraySlice<UInt8>) {
        bytes = data
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { bytes.count }

    /// -dBov of the CSRC at `position` (0…127); the reserved top bit is ignored.
    public subscript(position: Int) -> UInt8 {
        bytes.byte(at: position) & 0x7F
    }
}

/// The abs-send-time extension (`http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time`):
/// 24 bits of the sender's clock as 6.18 fixed-point seconds, i.e. it wraps every 64 s. The
/// receive-side bandwidth estimator (REMB) compares it with arrival times.
public struct AbsoluteSendTime: Sendable, Equatable, Hashable {
    /// Units of 2^-18 s, 0…0xFFFFFF.
    public let rawValue: UInt32

    public init(rawValue: UInt32) {
        self.rawValue = rawValue & 0xFF_FFFF
    }

    /// nil unless `data` holds at least 3 bytes.
    public init?(data: ArraySlice<UInt8>) {
        guard data.count >= 3 else { return nil }
        self.init(rawValue: data.uint24(at: 0))
    }

    /// The low 6 bits of the whole seconds and 18 bits of the fraction of `nanoseconds`.
    public init(nanoseconds: UInt64) {
        let seconds = nanoseconds / 1_000_000_000
        let remainder = nanoseconds % 1_000_000_000
        // remainder < 2^30, so the shift cannot overflow.
        let fraction = (remainder << 18) / 1_000_000_000
        self.init(rawValue: UInt32(truncatingIfNeeded: (seconds & 0x3F) << 18 | fraction))
    }

    /// The time within the 64-second window, in nanoseconds.
    public var nanoseconds: UInt64 {
        (UInt64(rawValue) * 1_000_000_000) >> 18
    }
}

/// Typed readers for the data of single extension elements, for callers that found the element
/// themselves (e.g. through `RTPHeaderExtensions.first(id:)`).
public enum RTPHeaderExtensionData {
    /// transport-wide-cc (draft-holmer-rmcat-transport-wide-cc-extensions-01 §2): the 16-bit
    /// transport-wide sequence number. The later "-02" variant appends 2 bytes, ignored here.
    public static func transportSequenceNumber(_ data: ArraySlice<UInt8>) -> UInt16? {
        data.count >= 2 ? data.uint16(at: 0) : nil
    }

    /// sdes:mid (RFC 8843 §15, carried as an RFC 7941 SDES item): the media identification tag
    /// as bytes. Trailing zero bytes, which some senders leave as padding, are dropped; nil when
    /// nothing remains.
    public static func mid(_ data: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        var end = data.endIndex
        while end > data.startIndex, data[end - 1] == 0 { end -= 1 }
        return end > data.startIndex ? data[data.startIndex..<end] : nil
    }

    /// sdes:rtp-stream-id and sdes:repaired-rtp-stream-id (RFC 8852 §3, SDES items like the
    /// mid): the RID as bytes, trailing zero padding dropped; nil when nothing remains.
    public static func rtpStreamID(_ data: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        mid(data)
    }

    /// sdes:mid as text; nil when empty or not valid UTF-8.
    public static func midString(_ data: ArraySlice<UInt8>) -> String? {
        mid(data).flatMap { String(validating: $0, as: UTF8.self) }
    }
}

/// The local IDs that SDP `a=extmap` lines bound to the extensions Chorus understands, for one
/// direction of one transport. `decode(_:)` reads all of them from a packet in one pass over its
/// extension block; absent IDs are simply not looked for.
public struct RTPHeaderExtensionMap: Sendable, Equatable {
    public var mid: UInt8?
    public var audioLevel: UInt8?
    public var csrcAudioLevels: UInt8?
    public var transportSequenceNumber: UInt8?
    public var absoluteSendTime: UInt8?

    public init(
        mid: UInt8? = nil, audioLevel: UInt8? = nil, csrcAudioLevels: UInt8? = nil,
        transportSequenceNumber: UInt8? = nil, absoluteSendTime: UInt8? = nil
    ) {
        self.mid = mid
        self.audioLevel = audioLevel
        self.csrcAudioLevels = csrcAudioLevels
        self.transportSequenceNumber = transportSequenceNumber
        self.absoluteSendTime = absoluteSendTime
    }

    /// The values found in `extensions`, in one pass and without allocating. An element whose
    /// data is too short for its type is left out, as if absent.
    public func decode(_ extensions: RTPHeaderExtensions) -> RTPHeaderExtensionValues {
        var values = RTPHeaderExtensionValues()
        for element in extensions {
            switch element.id {
            case mid: values.mid = RTPHeaderExtensionData.mid(element.data)
            case audioLevel: values.audioLevel = AudioLevelIndication(data: element.data)
            case csrcAudioLevels: values.csrcAudioLevels = CSRCAudioLevels(data: element.data)
            case transportSequenceNumber:
                values.transportSequenceNumber = RTPHeaderExtensionData.transportSequenceNumber(element.data)
            case absoluteSendTime: values.absoluteSendTime = AbsoluteSendTime(data: element.data)
            default: break
            }
        }
        return values
    }
}

/// The extension values of one packet, as decoded by `RTPHeaderExtensionMap.decode(_:)`.
public struct RTPHeaderExtensionValues: Sendable, Equatable {
    /// The sdes:mid bytes (compare with the negotiated MID's UTF-8 without building a String).
    public var mid: ArraySlice<UInt8>?
    public var audioLevel: AudioLevelIndication?
    public var csrcAudioLevels: CSRCAudioLevels?
    public var transportSequenceNumber: UInt16?
    public var absoluteSendTime: AbsoluteSendTime?

    public init() {}

    public var midString: String? {
        mid.flatMap { String(validating: $0, as: UTF8.self) }
    }
}
