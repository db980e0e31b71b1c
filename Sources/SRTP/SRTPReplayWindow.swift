/// What a replay list says about one packet index (RFC 3711 §3.3.2).
enum SRTPReplayVerdict: Equatable {
    /// Not seen and inside (or ahead of) the window.
    case fresh
    /// Inside the window and already seen (libsrtp2's `replay_fail`).
    case seen
    /// Behind the window, so it can no longer be told apart from a replay (`replay_old`).
    case tooOld
}

/// SRTP packet-index estimation (RFC 3711 §3.3.1, Appendix A) and replay list (§3.3.2) for one
/// SSRC: the highest 48-bit index ROC‖SEQ accepted so far and a bitmap of the `size` indices
/// ending there. Senders use it too, to find their own ROC and to refuse re-protecting an index
/// too old to be accepted.
///
/// It mirrors libsrtp2's `srtp_rdbx_t` with the 1024-packet window `LibSRTPTransform` configures,
/// so both transforms accept and reject exactly the same packets: a 128-packet window would drop
/// late NACK retransmissions that libsrtp2 accepts today. The bitmap is circular (bit i mod size
/// holds index i), which is equivalent to libsrtp2's shifting bit vector and costs one bit clear
/// per new packet instead of a 1024-bit shift.
struct SRTPReplayWindow {
    /// Window length in packets (RFC 3711 §3.3.2 asks for at least 64); `Words16` holds it.
    static let size = 1024
    private static let wordCount = size / 64

    /// Highest accepted index, ROC << 16 | SEQ; 0 before any packet (libsrtp2 starts there too).
    private(set) var index: UInt64 = 0
    private var bits = Words16()

    /// The index estimate of Appendix A for an incoming sequence number, and its distance from
    /// the highest index (positive: ahead). While the highest index is at most 2^15 the ROC is
    /// taken as 0 rather than guessed as ROC − 1, which would underflow (libsrtp2 does the same).
    func estimate(_ sequenceNumber: UInt16) -> (index: UInt64, delta: Int) {
        let seq = Int(sequenceNumber)
        guard index > 0x8000 else { return (UInt64(sequenceNumber), seq - Int(index)) }
        let localROC = UInt32(truncatingIfNeeded: index >> 16)
        let localSeq = Int(UInt16(truncatingIfNeeded: index))
        var roc = localROC
        let delta: Int
        if localSeq < 0x8000 {
            if seq - localSeq > 0x8000 {
                roc = localROC &- 1
                delta = seq - localSeq - 0x10000
            } else {
                delta = seq - localSeq
            }
        } else if localSeq - 0x8000 > seq {
            roc = localROC &+ 1
            delta = seq - localSeq + 0x10000
        } else {
            delta = seq - localSeq
        }
        return (UInt64(roc) << 16 | UInt64(sequenceNumber), delta)
    }

    /// The replay verdict for the index `delta` away from the highest one.
    func check(_ delta: Int) -> SRTPReplayVerdict {
        if delta > 0 { return .fresh }
        if delta <= -Self.size { return .tooOld }
        return bit(index &+ UInt64(bitPattern: Int64(delta))) ? .seen : .fresh
    }

    /// Records the index `delta` away from the highest one; call only after the packet has
    /// authenticated (receivers) or been accepted for protection (senders).
    mutating func add(_ delta: Int) {
        guard delta > 0 else {
            if delta > -Self.size { setBit(index &+ UInt64(bitPattern: Int64(delta))) }
            return
        }
        // Indices that slide out of the window share bit positions with the new ones: clear them.
        if delta >= Self.size {
            for word in 0..<Self.wordCount { bits[word] = 0 }
        } else {
            for step in 1...delta { clearBit(index &+ UInt64(step)) }
        }
        index &+= UInt64(delta)
        setBit(index)
    }

    private func bit(_ index: UInt64) -> Bool {
        let position = Int(index % UInt64(Self.size))
        return bits[position >> 6] & (1 << UInt64(position & 63)) != 0
    }

    private mutating func setBit(_ index: UInt64) {
        let position = Int(index % UInt64(Self.size))
        bits[position >> 6] |= 1 << UInt64(position & 63)
    }

    private mutating func clearBit(_ index: UInt64) {
        let position = Int(index % UInt64(Self.size))
        bits[position >> 6] &= ~(1 << UInt64(position & 63))
    }
}

/// 1024 bits stored inline (no heap) as 16 words. A tuple rather than `InlineArray`, which needs
/// the Swift 6.2 runtime and so would not build for the package's macOS 14 platform.
private struct Words16 {
    private var storage: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                          UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
        = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

    /// Word `word`, 0..<16.
    subscript(word: Int) -> UInt64 {
        get { withUnsafeBytes(of: storage) { $0.load(fromByteOffset: word * 8, as: UInt64.self) } }
        set {
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: newValue, toByteOffset: word * 8, as: UInt64.self) }
        }
    }
}

/// SRTCP replay list for one SSRC (RFC 3711 §3.3.2 applied to the explicit 31-bit SRTCP index):
/// a 128-index window starting at `windowStart`, as libsrtp2's `srtp_rdb_t`. SRTCP indices are
/// carried in the packet, so there is nothing to estimate.
struct SRTCPReplayWindow {
    /// Window length in indices (libsrtp2's fixed `rdb_bits_in_bitmask`).
    static let size: UInt32 = 128

    /// Lowest index the window still covers.
    private(set) var windowStart: UInt32 = 0
    /// Bit i (low word first) records index windowStart + i.
    private var low: UInt64 = 0
    private var high: UInt64 = 0

    /// The replay verdict for an SRTCP index (at most 2^31 − 1, so the sums cannot overflow).
    func check(_ index: UInt32) -> SRTPReplayVerdict {
        if index >= windowStart + Self.size { return .fresh }
        if index < windowStart { return .tooOld }
        return bit(index - windowStart) ? .seen : .fresh
    }

    /// Records an authenticated index, sliding the window so that it ends at the index when the
    /// index lies beyond it.
    mutating func add(_ index: UInt32) {
        guard index >= windowStart else { return }
        var offset = index - windowStart
        if offset >= Self.size {
            let shift = offset - (Self.size - 1)
            shiftDown(shift)
            windowStart += shift
            offset = Self.size - 1
        }
        if offset < 64 { low |= 1 << UInt64(offset) } else { high |= 1 << UInt64(offset - 64) }
    }

    private func bit(_ offset: UInt32) -> Bool {
        offset < 64 ? low & (1 << UInt64(offset)) != 0 : high & (1 << UInt64(offset - 64)) != 0
    }

    /// Moves every bit `shift` positions toward bit 0, dropping the ones that leave the window.
    private mutating func shiftDown(_ shift: UInt32) {
        if shift >= 128 {
            low = 0
            high = 0
        } else if shift >= 64 {
            low = high >> UInt64(shift - 64)
            high = 0
        } else if shift > 0 {
            low = (low >> UInt64(shift)) | (high << UInt64(64 - shift))
            high >>= UInt64(shift)
        }
    }
}

/// Everything one direction remembers about one SSRC: the SRTP index window (RTP packets carry
/// the SSRC at bytes 8–11) and the SRTCP state for RTCP packets whose first sender SSRC (bytes
/// 4–7) is the same. libsrtp2 also keeps both in one stream per SSRC.
struct SRTPStreamState {
    /// RTP: highest index and replay list (senders: own ROC and re-protection limit).
    var rtp = SRTPReplayWindow()
    /// SRTCP receive replay list.
    var rtcp = SRTCPReplayWindow()
    /// SRTCP send index: the last one used; the first packet carries 1 (RFC 3711 §3.4).
    var rtcpSent: UInt32 = 0
}

/// Per-SSRC state for any number of SSRCs, found through a dictionary of slots so that the
/// states themselves stay in one contiguous array and are mutated in place (no copy, no
/// allocation per packet; one allocation the first time an SSRC is seen).
///
/// The last SSRC looked up is remembered with its slot (slots are never removed or reused):
/// a listener's transport protects one stream per tick, so most lookups skip the hash, which
/// was 7 % of a big room's per-listener delivery.
struct SRTPStreamTable {
    private var slots: [UInt32: Int] = [:]
    private var lastSSRC: UInt32?
    private var lastSlot = 0
    /// Indexed by the slot numbers `slot(for:)` and `insert(_:)` return.
    var streams: ContiguousArray<SRTPStreamState> = []

    /// The slot of a known SSRC.
    func slot(for ssrc: UInt32) -> Int? {
        if ssrc == lastSSRC { return lastSlot }
        return slots[ssrc]
    }

    /// The slot of an SSRC, created fresh if it is new.
    mutating func insert(_ ssrc: UInt32) -> Int {
        if ssrc == lastSSRC { return lastSlot }
        let slot: Int
        if let known = slots[ssrc] {
            slot = known
        } else {
            streams.append(SRTPStreamState())
            slot = streams.count - 1
            slots[ssrc] = slot
        }
        lastSSRC = ssrc
        lastSlot = slot
        return slot
    }

    /// Number of SSRCs with state.
    var count: Int { streams.count }
}
