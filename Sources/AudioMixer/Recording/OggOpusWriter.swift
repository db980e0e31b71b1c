/// Ogg Opus (RFC 7845 over RFC 3533) from Opus packets that were already encoded: the room's
/// mix as it is sent, or one participant's own packets as they were played, with no second
/// encode. A sans-IO value: `begin()` returns the two header pages; `append(_:)` takes one 20 ms
/// mix packet (or nil: a tick without a packet, a DTX pause or a silent mix, filled with a
/// cached silence packet so the timeline and the granule positions stay those of the room's
/// clock); `append(packet:samples:)` and `appendSilence(samples:)` take a participant's packets
/// of any Opus duration and the gaps between them. A page comes out for every second of audio;
/// `finish()` returns the last page, flagged end-of-stream. A reader of a file cut at any page
/// boundary (a `kill -9`) still finds a valid, playable stream up to that page.
public struct OggOpusWriter: Sendable {
    /// libopus's encoder delay at 48 kHz (2.5 ms + 4 ms), the decoder's pre-skip.
    public static let preSkip: UInt16 = 312
    public static let samplesPerPacket: UInt64 = 960
    /// Lacing values one page can hold (RFC 3533: a one-byte count).
    static let maxLacing = 255
    /// 50 packets of 20 ms: one page a second, what the file may lose to a crash.
    public let packetsPerPage: Int
    private let serial: UInt32
    private let silence: OpusSilence
    private var sequence: UInt32 = 0
    private var granule: UInt64 = 0
    private var pageStart: UInt64 = 0
    private var pending: [[UInt8]] = []
    private var pendingLacing = 0
    public private(set) var packets: UInt64 = 0

    /// `silence`: Opus packets of silence (made once by the caller's encoder).
    public init(serial: UInt32, silence: OpusSilence, packetsPerPage: Int = 50) {
        self.serial = serial
        self.silence = silence
        self.packetsPerPage = max(1, packetsPerPage)
    }

    /// Seconds of audio written so far (pre-skip excluded).
    public var duration: Double {
        Double(max(0, Int64(granule) - Int64(Self.preSkip))) / 48_000
    }

    /// 48 kHz samples written so far: the granule position of the next page.
    public var samplesWritten: UInt64 { granule }

    /// The identification header page (OpusHead, beginning of stream) and the comment header
    /// page (OpusTags, with `comments` as "NAME=value" user comments), each on a page of its
    /// own as RFC 7845 §3 requires.
    public mutating func begin(vendor: String = "Chorus", comments: [String] = []) -> [UInt8] {
        var head: [UInt8] = Array("OpusHead".utf8) + [1, 1]
        head += Self.littleEndian(UInt64(Self.preSkip), bytes: 2) + Self.littleEndian(48_000, bytes: 4) + [0, 0, 0]
        var tags: [UInt8] = Array("OpusTags".utf8) + Self.littleEndian(UInt64(vendor.utf8.count), bytes: 4)
        tags += Array(vendor.utf8) + Self.littleEndian(UInt64(comments.count), bytes: 4)
        for comment in comments { tags += Self.littleEndian(UInt64(comment.utf8.count), bytes: 4) + Array(comment.utf8) }
        // The comment page must fit one page's lacing (about 64 KB): callers pass short tags.
        guard tags.count / 255 < Self.maxLacing else { return begin(vendor: "Chorus") }
        return page([head], granule: 0, flags: 0x02) + page([tags], granule: 0, flags: 0)
    }

    /// One tick's mix packet (nil: none this tick); a page when one is full.
    public mutating func append(_ packet: [UInt8]?) -> [UInt8] {
        append(packet: packet ?? silence.twentyMilliseconds, samples: Int(Self.samplesPerPacket))
    }

    /// One packet lasting `samples` (read from its TOC by the caller); a page when one is full.
    public mutating func append(packet: [UInt8], samples: Int) -> [UInt8] {
        // A page carries at most 255 lacing values: a packet needing more (over 64 KB, which a
        // peer's payload could be, never a real Opus frame) is recorded as silence.
        guard !packet.isEmpty, packet.count / 255 < Self.maxLacing else { return appendSilence(samples: samples) }
        return add(packet, samples: samples)
    }

    /// `samples` of silence (a gap in a participant's stream), in as few packets as cover it.
    public mutating func appendSilence(samples: Int) -> [UInt8] {
        var out: [UInt8] = []
        silence.forEachPacket(covering: samples) { length, packet in out += add(packet, samples: length) }
        return out
    }

    private mutating func add(_ packet: [UInt8], samples: Int) -> [UInt8] {
        var out: [UInt8] = []
        // A run of large packets closes a page early, before its lacing overflows.
        if pendingLacing + packet.count / 255 + 1 > Self.maxLacing {
            out = page(pending, granule: granule, flags: 0)
            clearPending()
        }
        pending.append(packet)
        pendingLacing += packet.count / 255 + 1
        packets += 1
        granule += UInt64(max(0, samples))
        guard granule - pageStart >= UInt64(packetsPerPage) * Self.samplesPerPacket else { return out }
        out += page(pending, granule: granule, flags: 0)
        clearPending()
        return out
    }

    private mutating func clearPending() {
        pending.removeAll(keepingCapacity: true)
        pendingLacing = 0
        pageStart = granule
    }

    /// The packets still pending on a last page flagged end-of-stream. When none are (the
    /// recording stopped right after a page), the page carries granule position -1, RFC 3533's
    /// "no packet finishes on this page": a positive one on an empty page made opusinfo reject
    /// the file (a 20 s recording stopped on its 20th page did).
    public mutating func finish() -> [UInt8] {
        defer { clearPending() }
        return page(pending, granule: pending.isEmpty ? .max : granule, flags: 0x04)
    }

    /// One Ogg page (RFC 3533 §6): header, lacing values, the packets, and its CRC.
    private mutating func page(_ packets: [[UInt8]], granule: UInt64, flags: UInt8) -> [UInt8] {
        var lacing: [UInt8] = []
        for packet in packets {
            lacing += [UInt8](repeating: 255, count: packet.count / 255)
            lacing.append(UInt8(packet.count % 255))
        }
        var bytes: [UInt8] = Array("OggS".utf8) + [0, flags]
        bytes += Self.littleEndian(granule, bytes: 8) + Self.littleEndian(UInt64(serial), bytes: 4)
        bytes += Self.littleEndian(UInt64(sequence), bytes: 4) + [0, 0, 0, 0, UInt8(lacing.count)] + lacing
        for packet in packets { bytes += packet }
        let crc = OggCRC.checksum(bytes)
        for index in 0..<4 { bytes[22 + index] = UInt8(truncatingIfNeeded: crc >> (8 * index)) }
        sequence &+= 1
        return bytes
    }

    static func littleEndian(_ value: UInt64, bytes: Int) -> [UInt8] {
        (0..<bytes).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }
}

/// Ogg's CRC-32 (RFC 3533 §6): polynomial 0x04C11DB7, not reflected, initial value 0.
enum OggCRC {
    static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index) << 24
        for _ in 0..<8 { value = value & 0x8000_0000 != 0 ? (value << 1) ^ 0x04C1_1DB7 : value << 1 }
        return value
    }

    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0
        for byte in bytes { crc = (crc << 8) ^ table[Int(((crc >> 24) ^ UInt32(byte)) & 0xFF)] }
        return crc
    }
}
