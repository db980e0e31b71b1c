import AudioMixer
import ChorusCore
import Dispatch
import PeerTransport

/// A big room's per-listener work spread over lanes, one per core (issue 18, item 1). Mixing,
/// encoding and every decision stay on the room's queue; what is the same work once per
/// listener — packetising the shared payload on the listener's own stream, stamping and SRTP
/// protecting it — is split into contiguous slices of the recipients, run at once by
/// `DispatchQueue.concurrentPerform` (the room's own thread takes one slice). Each lane writes
/// only its own listeners, its own packet buffer and its own batch in `RoomOutput.laneTransmits`,
/// which the shell then sends, lanes in parallel again. No lock is taken per packet: the slices
/// are disjoint, and the room's thread waits inside the fork-join, so nothing else runs on the
/// room meanwhile. A payload with fewer recipients than two lanes' worth goes the ordinary way.
extension RoomCore {
    /// Below this many recipients per lane a fan-out costs more than it saves (a fork-join is
    /// tens of microseconds; one listener's packet about one).
    static let minimumRecipientsPerLane = 96

    /// The lanes a payload for `count` recipients is spread over: 1 (no fan-out) unless the
    /// room may use several and each gets at least `minimumRecipientsPerLane`.
    func laneCount(forRecipients count: Int) -> Int {
        guard let lanes = media?.lanes, lanes > 1 else { return 1 }
        return max(1, min(lanes, count / Self.minimumRecipientsPerLane))
    }

    /// `deliver` for many recipients: the same packets as one lane would write, in `lanes`
    /// batches.
    func deliverInLanes(_ payload: UnsafeRawBufferPointer, mix: AudioMixerTick<CallID>.Mix, to targets: [Participant],
                        relayed: Bool, lanes: Int, now: MediaTime) {
        laneFanOuts &+= 1
        RoomMetrics.laneFanOut()
        output.prepareLanes(lanes)
        while laneScratch.count < lanes { laneScratch.append([]) }
        targets.withUnsafeBufferPointer { targets in
            laneScratch.withUnsafeMutableBufferPointer { scratch in
                output.laneTransmits.withUnsafeMutableBufferPointer { batches in
                    let job = MixLaneJob(targets: targets, scratch: scratch, batches: batches, payload: payload,
                                         csrcs: mix.csrcs, csrcAudioLevels: mix.csrcAudioLevels, relayed: relayed,
                                         tick: audioTicks, now: now, lanes: lanes)
                    DispatchQueue.concurrentPerform(iterations: lanes) { job.run(lane: $0) }
                }
            }
        }
    }
}

extension RoomCore {
    /// The tick's first step for a big room: each member's next frame out of its jitter buffer
    /// (the decode of a speaker, the level of a quiet one, comfort noise or concealment) is
    /// made on the lanes, in contiguous slices of `members`, and handed straight into the
    /// member's slot in the mixer (`RoomAudioMixer.ConcurrentInputs`). The same inputs as
    /// `feedMixer` one by one: a member's frame depends only on its own state and on whether it
    /// was a mixed speaker, which its slot says.
    func feedMixerInLanes(_ lanes: Int, now: MediaTime) {
        laneInputFanOuts &+= 1
        members.withUnsafeBufferPointer { members in
            mixer.withConcurrentInputs { inputs in
                let job = InputLaneJob(members: members, inputs: inputs, now: now, lanes: lanes)
                DispatchQueue.concurrentPerform(iterations: lanes) { job.run(lane: $0) }
            }
        }
    }
}

/// One fan-out of the members' mixer inputs.
///
/// `@unchecked Sendable` because it carries pointers and non-Sendable participants into
/// `concurrentPerform`'s threads. Safe: lane `k` touches only the members of its own slice
/// (disjoint; a participant is a member once) and their slots in `inputs`, which are distinct
/// for distinct members; the room's thread waits inside `concurrentPerform` until every lane
/// is done, with the mixer borrowed by `withConcurrentInputs`.
private struct InputLaneJob: @unchecked Sendable {
    let members: UnsafeBufferPointer<Participant>
    let inputs: RoomAudioMixer<CallID>.ConcurrentInputs
    let now: MediaTime
    let lanes: Int

    func run(lane: Int) {
        let count = members.count
        for index in (count * lane / lanes)..<(count * (lane + 1) / lanes) {
            let member = members[index]
            guard let handle = member.mixerHandle else { continue }
            inputs.setInput(for: handle) { member.mixerInput(now: now, wasSpeaker: $0) }
        }
    }
}

/// One fan-out of a mix payload: what every lane reads, and where each writes.
///
/// `@unchecked Sendable` because it carries pointers and non-Sendable participants into
/// `concurrentPerform`'s threads. Safe: lane `k` touches only the participants of its own slice
/// of `targets` (the slices are disjoint and a participant appears once), `scratch[k]` and
/// `batches[k]`; everything else it reads (`payload`, the CSRC lists) is not written while the
/// lanes run, and `concurrentPerform` returns only after every lane has finished, while the
/// room's thread waits in it.
private struct MixLaneJob: @unchecked Sendable {
    let targets: UnsafeBufferPointer<Participant>
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

extension Participant {
    /// One mix payload on this participant's own stream, for audio tick `tick`: its RTP header
    /// (sequence number, timestamp after the silent ticks since its last frame, CSRCs and their
    /// levels) written in `scratch`, then stamped, protected and appended to `transmits` by its
    /// transport. The same on the room's thread and on a lane.
    func sendMix(_ payload: UnsafeRawBufferPointer, csrcs: [SSRC], csrcAudioLevels: [UInt8], relayed: Bool,
                 tick: UInt64, now: MediaTime, scratch: inout [UInt8], transmits: inout [Transmit]) {
        audio.moveOutbound(to: tick)
        scratch.removeAll(keepingCapacity: true)
        audio.outbound.packet(payload: payload, csrcs: csrcs, csrcAudioLevels: csrcAudioLevels, into: &scratch)
        let reported = ReportedPacket(timestamp: audio.outbound.lastSentTimestamp ?? 0, payloadOctets: payload.count,
                                      clockRate: 48_000)
        transport.sendRTP(scratch, reporting: reported, now: now, transmits: &transmits)
        audio.mixFramesSent &+= 1
        if relayed { audio.mixFramesRelayed &+= 1 }
    }
}
