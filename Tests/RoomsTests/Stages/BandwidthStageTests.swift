import ChorusCore
import CongestionControl
import Testing
import VideoForwarder

@testable import Rooms

/// The bandwidth stage on its own: what it tells the video router a subscriber may be sent,
/// its once-a-second samples, the probe bursts it schedules and how it backs off probing for
/// paused slots. Members' connections are recording ones whose estimate the test sets.
@Suite("BandwidthStage on a simulated clock")
struct BandwidthStageTests {
    static func call(_ index: Int) -> CallID {
        CallID(guid: ApplicationKey(randomBytes: Array(repeating: UInt8(index), count: 16)).rawValue)
    }

    /// The connection's own estimate wins over a REMB; the audio's share comes off either; a
    /// REMB-only subscriber's budget is not a measurement (it does not bound repairs).
    @Test func theBudgetIsTheDownlinkLessTheAudio() {
        var stage = BandwidthStage()
        let measured = RecordingConnection(rtcpSSRC: SSRC(1)), remb = RecordingConnection(rtcpSSRC: SSRC(2))
        stage.add(Self.call(1), connection: measured, hasVideo: true, probeable: true)
        stage.add(Self.call(2), connection: remb, hasVideo: true, probeable: true)
        #expect(stage.budget(of: Self.call(1)) == nil && stage.downlink(of: Self.call(1)) == nil)
        measured.bandwidthEstimate = BandwidthEstimate(targetBitrate: 1_000_000)
        stage.receiveREMB(300_000, from: Self.call(1))
        stage.receiveREMB(500_000, from: Self.call(2))
        #expect(stage.budget(of: Self.call(1)) == VideoBudget(video: 944_000, measured: 944_000))
        #expect(stage.budget(of: Self.call(2)) == VideoBudget(video: 444_000, measured: nil))
        #expect(stage.downlink(of: Self.call(1))?.source == "transportCC")
        #expect(stage.downlink(of: Self.call(2))?.source == "remb")
    }

    /// A small room samples each established member once a second by its own clock; the
    /// samples are the call record's summary and go out for `/metrics`.
    @Test func eachEstablishedMemberIsSampledOnceASecond() {
        var stage = BandwidthStage()
        let connection = RecordingConnection(rtcpSSRC: SSRC(1))
        connection.bandwidthEstimate = BandwidthEstimate(targetBitrate: 700_000)
        stage.add(Self.call(1), connection: connection, hasVideo: false, probeable: false)
        stage.add(Self.call(2), connection: RecordingConnection(rtcpSSRC: SSRC(2)), hasVideo: false, probeable: false)
        stage.setEstablished(Self.call(1))
        var output = RoomOutput()
        var now = MediaTime.seconds(5)
        for _ in 0..<150 {
            now = now.adding(milliseconds: 20)
            stage.sampleEstimates(now: now, stripes: nil, into: &output)
        }
        #expect(stage.sampledSeconds(of: Self.call(1)) == 3)
        #expect(output.counters.downlinkEstimates == [700_000, 700_000, 700_000])
        #expect(stage.sampledSeconds(of: Self.call(2)) == 0, "a member not established is not sampled")
        #expect(stage.downlinkSummary(of: Self.call(1))?.samples.mean == 700_000)
    }

    /// A probe cluster goes out as two bursts one tick apart, each the larger of half a tick at
    /// the cluster's rate and the minimum burst (6 KB: 23 padding packets of 267 bytes); a
    /// member without an RTX stream is never probed.
    @Test func aProbeIsTwoBurstsOneTickApart() {
        var stage = BandwidthStage()
        let probed = RecordingConnection(rtcpSSRC: SSRC(1)), unprobeable = RecordingConnection(rtcpSSRC: SSRC(2))
        stage.add(Self.call(1), connection: probed, hasVideo: true, probeable: true)
        stage.add(Self.call(2), connection: unprobeable, hasVideo: true, probeable: false)
        stage.setEstablished(Self.call(1))
        stage.setEstablished(Self.call(2))
        let now = MediaTime.seconds(5)
        let cluster = ProbeCluster(id: 7, targetBitrate: 1_000_000, minimumBytes: 10_000, minimumPackets: 5, createdAt: now)
        probed.pendingProbe = cluster
        unprobeable.pendingProbe = cluster
        let first = stage.probeBursts(now: now)
        let second = stage.probeBursts(now: now.adding(milliseconds: 20))
        let third = stage.probeBursts(now: now.adding(milliseconds: 40))
        #expect(first == [ProbeBurst(callId: Self.call(1), cluster: cluster, packets: 23)])
        #expect(second == first && third.isEmpty)
        #expect(unprobeable.pendingProbe != nil, "an unprobeable member's request was taken")
    }

    /// A slot paused for bandwidth is probed at what it needs with headroom, 2 s, 4 s, then
    /// 8 s apart while it stays paused; the backoff starts over once nothing is paused.
    @Test func pausedSlotsAreProbedWithABackoff() {
        var stage = BandwidthStage()
        let connection = RecordingConnection(rtcpSSRC: SSRC(1))
        stage.add(Self.call(1), connection: connection, hasVideo: true, probeable: true)
        let start = MediaTime.seconds(5)
        let need = PausedSlotNeed(callId: Self.call(1), budget: 100_000, need: 150_000)
        var probedAt: [UInt64] = []
        for second: UInt64 in 0...20 {
            let before = connection.probesRequested.count
            stage.pausedSlots([need], now: start.adding(milliseconds: second * 1_000))
            if connection.probesRequested.count > before { probedAt.append(second) }
        }
        #expect(probedAt == [0, 2, 6, 14])
        let target = Double(100_000 + BandwidthStage.audioReserveBitsPerSecond + 150_000) * LayerAllocator.upgradeHeadroom
        #expect(connection.probesRequested.first == Int(target))
        stage.pausedSlots([PausedSlotNeed(callId: Self.call(1), budget: 400_000, need: nil)], now: start.adding(milliseconds: 21_000))
        stage.pausedSlots([need], now: start.adding(milliseconds: 22_000))
        #expect(connection.probesRequested.count == 5, "the backoff did not start over")
    }
}

extension VideoBudget: Equatable {
    public static func == (lhs: VideoBudget, rhs: VideoBudget) -> Bool {
        lhs.video == rhs.video && lhs.measured == rhs.measured
    }
}
