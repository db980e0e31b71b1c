import AudioMixer
import ChorusCore
import PeerTransport

/// A big room's per-listener work spread over lanes, one per core. Mixing, encoding and every
/// decision stay on the room's thread; what is the same work once per listener — packetising
/// the shared payload on the listener's own stream, stamping and SRTP protecting it — is split
/// into contiguous slices of the recipients, which the shell's `LaneRunner` runs at once (the
/// room's own thread takes one slice and waits for the others). Each lane writes only its own
/// listeners, its own packet buffer and its own batch in `RoomOutput.laneTransmits`, which the
/// shell then sends, lanes in parallel again. No lock is taken per packet: the slices are
/// disjoint, and the room's thread waits inside the fork-join, so nothing else runs on the
/// room meanwhile. A payload with fewer recipients than two lanes' worth goes the ordinary way.
///
/// The stage starts no thread itself: with the default `SerialLanes` (tests) the lanes run one
/// after another on the caller's thread, with the same slices and batches.
extension AudioStage {
    /// Below this many recipients per lane a fan-out costs more than it saves (a fork-join is
    /// tens of microseconds; one listener's packet about one).
    static let minimumRecipientsPerLane = 96

    /// The lanes a payload for `count` recipients is spread over: 1 (no fan-out) unless the
    /// room may use several and each gets at least `minimumRecipientsPerLane`.
    func laneCount(forRecipients count: Int) -> Int {
        guard lanes > 1 else { return 1 }
        return max(1, min(lanes, count / Self.minimumRecipientsPerLane))
    }

    /// `deliver` for many recipients: the same packets as one lane would write, in `lanes`
    /// batches.
    mutating func deliverInLanes(_ payload: UnsafeRawBufferPointer, mix: AudioMixerTick<CallID>.Mix,
                                 to targets: [MemberAudio], relayed: Bool, lanes: Int, now: MediaTime,
                                 into output: inout RoomOutput) {
        laneFanOuts &+= 1
        output.counters.laneFanOuts &+= 1
        output.prepareLanes(lanes)
        while laneScratch.count < lanes { laneScratch.append([]) }
        let runner = laneRunner, tick = ticks
        targets.withUnsafeBufferPointer { targets in
            laneScratch.withUnsafeMutableBufferPointer { scratch in
                output.laneTransmits.withUnsafeMutableBufferPointer { batches in
                    let job = MixLaneJob(targets: targets, scratch: scratch, batches: batches, payload: payload,
                                         csrcs: mix.csrcs, csrcAudioLevels: mix.csrcAudioLevels, relayed: relayed,
                                         tick: tick, now: now, lanes: lanes)
                    runner.run(lanes: lanes) { job.run(lane: $0) }
                }
            }
        }
    }

    /// The tick's first step for a big room: each member's next frame out of its jitter buffer
    /// (the decode of a speaker, the level of a quiet one, comfort noise or concealment) is
    /// made on the lanes, in contiguous slices of `members`, and handed straight into the
    /// member's slot in the mixer (`RoomAudioMixer.ConcurrentInputs`). The same inputs as one
    /// by one: a member's frame depends only on its own state and on whether it was a mixed
    /// speaker, which its slot says.
    mutating func feedMixerInLanes(_ lanes: Int, now: MediaTime, mayHold: Bool) {
        laneInputFanOuts &+= 1
        let runner = laneRunner
        members.withUnsafeBufferPointer { members in
            mixer.withConcurrentInputs { inputs in
                let job = InputLaneJob(members: members, inputs: inputs, now: now, lanes: lanes, mayHold: mayHold)
                runner.run(lanes: lanes) { job.run(lane: $0) }
            }
        }
    }
}

/// One fan-out of the members' mixer inputs.
///
/// `@unchecked Sendable` because it carries pointers and non-Sendable members into the lanes'
/// threads. Safe: lane `k` touches only the members of its own slice (disjoint; a member is in
/// `members` once) and their slots in `inputs`, which are distinct for distinct members; the
/// room's thread waits inside the runner until every lane is done, with the mixer borrowed by
/// `withConcurrentInputs`.
private struct InputLaneJob: @unchecked Sendable {
    let members: UnsafeBufferPointer<MemberAudio>
    let inputs: RoomAudioMixer<CallID>.ConcurrentInputs
    let now: MediaTime
    let lanes: Int
    let mayHold: Bool

    func run(lane: Int) {
        let count = members.count
        for index in (count * lane / lanes)..<(count * (lane + 1) / lanes) {
            let member = members[index]
            inputs.setInput(for: member.mixerHandle) { member.mixerInput(now: now, wasSpeaker: $0, mayHold: mayHold) }
        }
    }
}

/// One fan-out of a mix payload: what every lane reads, and where each writes.
///
/// `@unchecked Sendable` because it carries pointers and non-Sendable members into the lanes'
/// threads. Safe: lane `k` touches only the members of its own slice of `targets` (the slices
/// are disjoint and a member appears once) and their connections, `scratch[k]` and
/// `batches[k]`; everything else it reads (`payload`, the CSRC lists) is not written while the
/// lanes run, and the runner returns only after every lane has finished, while the room's
/// thread waits in it.
private struct MixLaneJob: @unchecked Sendable {
    let targets: UnsafeBufferPointer<MemberAudio>
    let scratch: UnsafeMutableBufferPointer<[UInt8]>
    let batches: UnsafeMutableBufferPointer<[Transmit]>
    let payload: UnsafeRawBufferPointer
    let csrcs: [SSRC]
    let csrcAudioLevels: [UInt8]
    let relayed: Bool
    let tick: UInt64
    let now: MediaTime
    let lanes: Int

    /// Lane `lane`'s slice: contiguous, sizes differing by at most one.
    func slice(_ lane: Int) -> Range<Int> {
        let count = targets.count
        return (count * lane / lanes)..<(count * (lane + 1) / lanes)
    }

    func run(lane: Int) {
        for index in slice(lane) {
            targets[index].sendMix(payload, csrcs: csrcs, csrcAudioLevels: csrcAudioLevels, relayed: relayed, tick: tick,
                                   now: now, scratch: &scratch[lane], transmits: &batches[lane])
        }
    }
}

/// Runs `lanes` pieces of work at once and returns when every one is done (fork-join): how a
/// big room's per-listener work is spread (`AudioStage+Lanes`). The room's core never starts a
/// thread; its shell gives it a runner over the process's threads (`ConcurrentLanes`), and
/// tests and tools may keep the default, which runs the lanes one after another.
public protocol LaneRunner: Sendable {
    func run(lanes: Int, _ work: @Sendable (Int) -> Void)
}

/// Runs the lanes one after another on the caller's thread.
public struct SerialLanes: LaneRunner {
    public init() {}

    public func run(lanes: Int, _ work: @Sendable (Int) -> Void) {
        for lane in 0..<lanes { work(lane) }
    }
}
