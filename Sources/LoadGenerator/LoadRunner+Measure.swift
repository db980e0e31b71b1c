import ChorusCore
import Foundation
import NIOCore

extension LoadRunner {
    /// Every 5 ms on every shard's loop: each connection's checks, retransmissions and due
    /// frames (`LoadShard.startTicking`), one ticker per shard, in shard order.
    func startTicking() -> [RepeatedTask] {
        // At most 2,000,000 lags in all, shared out (about 2.8 hours of ticks on one loop).
        let maximumLags = 2_000_000 / shards.count
        return shards.map { $0.startTicking(window: window, maximumLags: maximumLags) }
    }

    /// Once a second on the home loop: established count, audio received and lost, latency
    /// (every shard's part, gathered from its loop), CPU and memory.
    func startSampling(since start: Date) -> RepeatedTask {
        let serverPID = configuration.serverPID ?? ProcessUsage.findServer(target: configuration.target)
        var server = serverPID.map(ProcessUsage.init)
        var generator = ProcessUsage(pid: getpid())
        var host = HostSteal()
        _ = server?.sample()
        _ = generator.sample()
        _ = host.sample()
        // Each sample updates the meters' last readings: they move to the loop, where the task runs.
        let meters = NIOLoopBoundBox.makeBoxSendingValue((server: server, generator: generator, host: host),
                                                         eventLoop: loop)
        return loop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
            let now = MediaTime.now()
            let serverUsage = meters.value.server?.sample()
            let own = meters.value.generator.sample()
            let stolen = meters.value.host.sample()
            let second = Date().timeIntervalSince(start)
            let shardSamples = self.shards.map { shard in shard.loop.submit { shard.sample(now: now) } }
            EventLoopFuture.whenAllSucceed(shardSamples, on: self.loop).whenSuccess { parts in
                let received = parts.reduce(0) { $0 + $1.received }, expected = parts.reduce(0) { $0 + $1.expected }
                let established = parts.reduce(0) { $0 + $1.established }
                let latency = LoadResults.Distribution(parts.flatMap(\.latencies)).p50
                let lossPercent = expected > 0 ? Double(max(0, expected - received)) * 100 / Double(expected) : 0
                self.samples.append(LoadResults.Sample(
                    second: second, established: established, audioPacketsReceived: received,
                    audioLossPercent: lossPercent, latencyMedianMs: latency,
                    serverCPUCores: serverUsage?.cores, serverMemoryMB: serverUsage?.residentMB,
                    generatorCPUCores: own.cores ?? 0, hostStealPercent: stolen,
                    serverSystemCPUCores: serverUsage?.systemCores))
                self.progress(String(format: "running: %d established, loss %.2f %%, latency p50 %.0f ms, server %.2f cores",
                                     established, lossPercent, latency, serverUsage?.cores ?? 0))
            }
        }
    }

    /// The run's results, on the event loop after the media stopped.
    func results(started: Date, contents: [LoadShard.Contents]) -> LoadResults {
        let configuration = self.configuration
        let participants = contents.flatMap(\.participants)
        let established = participants.filter { $0.connection.establishedAt != nil }
        let joinTimes = established.compactMap { participant in
            participant.connection.establishedAt.map { Double($0.nanoseconds(since: participant.connection.joinStartedAt)) / 1e6 }
        }
        var received = 0, expected = 0, withAudio = 0, jitters: [Double] = []
        var deaf: [String] = []
        let video = videoTotals(participants, auxiliaries: contents.flatMap(\.auxiliaries))
        for participant in participants {
            let streams = participant.statistics.audioStreams.values
            let got = streams.reduce(0) { $0 + $1.received }
            received += got
            expected += streams.reduce(0) { $0 + $1.expected }
            if got > 0 { withAudio += 1 } else if participant.expectsAudio { deaf.append(participant.userId) }
            jitters += streams.map(\.jitterMilliseconds)
        }
        // Steady state: the samples once everyone who will connect has.
        let steady = samples.filter { $0.established == established.count && established.count > 0 }
        let serverCPU = Self.mean(steady.compactMap(\.serverCPUCores))
        var errors = joinFailures.prefix(5).map { $0 }
        if !deaf.isEmpty { errors.append("\(deaf.count) listeners received no audio, e.g. \(deaf[0])") }
        if !video.blind.isEmpty { errors.append("\(video.blind.count) subscribers received no video, e.g. \(video.blind[0])") }
        for participant in participants { errors += participant.connection.errors.prefix(1) }
        let total = configuration.rooms * configuration.participants
        let passed = joinFailures.isEmpty && established.count == total && deaf.isEmpty && video.blind.isEmpty
        let onsets = onsetTally(participants)
        var scenario = LoadResults.Scenario(
            target: configuration.target, url: configuration.url, rooms: configuration.rooms,
            participantsPerRoom: configuration.participants, talkersPerRoom: configuration.talkers,
            video: configuration.video, slots: configuration.video ? configuration.slots : 0,
            durationSeconds: configuration.durationSeconds, rampUpPerSecond: configuration.rampUpPerSecond,
            simulcast: configuration.simulcast, transportCC: configuration.transportCC,
            transport: configuration.tcp ? "tcp" : "udp")
        scenario.janusPrebufferPackets = configuration.janusPrebufferPackets
        scenario.eventLoops = shards.count
        scenario.sockets = configuration.sharedSockets ? "shared" : "per-participant"
        let holes = repeatedHoles(participants)
        var results = LoadResults(
            scenario: scenario,
            startedAt: started, participants: total, joined: participants.count, established: established.count,
            joinTime: LoadResults.Distribution(joinTimes), listenersWithAudio: withAudio,
            participantsInDTX: participants.filter { $0.microphone?.sendsDTX == true }.count,
            audioPacketsReceived: received, audioPacketsExpected: expected,
            audioLossPercent: expected > 0 ? Double(max(0, expected - received)) * 100 / Double(expected) : 0,
            audioJitter: LoadResults.Distribution(jitters),
            audioRateLossPercent: rateLossPercent(participants),
            mouthToEar: LoadResults.Distribution(participants.flatMap { participant in
                participant.statistics.latencies.filter { $0.at >= self.window.from }.map(\.ms)
            } + Array(repeating: Self.onsetDeadlineMs, count: onsets.expected - onsets.detected)),
            onsetsExpected: onsets.expected, onsetsDetected: onsets.detected,
            onsetsRepeated: holes.count,
            repeatedOnsetHoles: holes,
            generatorTickLag: LoadResults.Distribution(contents.flatMap(\.tickLags)), bars: configuration.bars,
            videoFramesReceived: video.frames, videoPacketsReceived: video.received,
            videoSubscribers: video.subscribers, subscribersWithVideo: video.subscribers - video.blind.count,
            videoLossPercent: video.expected > 0 ? Double(max(0, video.expected - video.received)) * 100 / Double(video.expected) : 0,
            transportFeedbackSent: configuration.transportCC ? participants.reduce(0) { $0 + $1.connection.transportFeedbackSent } : nil,
            serverCPUCores: serverCPU, serverMemoryMB: samples.compactMap(\.serverMemoryMB).max(),
            generatorCPUCores: Self.mean(steady.map(\.generatorCPUCores)) ?? 0,
            hostStealPercent: Self.mean(steady.compactMap(\.hostStealPercent)),
            serverCPUSecondsPerParticipantSecond: serverCPU.map { $0 / Double(max(established.count, 1)) },
            samples: samples, errors: Array(errors.prefix(10)), passed: passed)
        let failed = configuration.bars.failures(results)
        results.serverSystemCPUCores = Self.mean(steady.compactMap(\.serverSystemCPUCores))
        results.failedBars = failed
        results.passed = passed && failed.isEmpty
        results.errors = Array((failed + results.errors).prefix(10))
        return results
    }

    /// The mean of the steady window's samples; nil when there are none.
    static func mean(_ values: [Double]) -> Double? {
        values.isEmpty ? nil : values.reduce(0, +) / Double(values.count)
    }

    /// A missed onset counts at this deadline (a probe matches an onset to a burst sent less
    /// than a second before it).
    static let onsetDeadlineMs = 1_000.0

    /// The holes before the onsets the probes heard twice in the measured window.
    func repeatedHoles(_ participants: [LoadParticipant]) -> [LoadResults.OnsetHole] {
        participants.flatMap { probe in
            probe.statistics.repeatedOnsets.filter { $0.at >= window.from && $0.at < window.until }.map(\.hole)
        }
    }

    /// Audio received in the window by the listeners that must hear it, against what the
    /// streams' timing says was sent (`WindowRate`), percent short; nil when nobody must hear.

    func rateLossPercent(_ participants: [LoadParticipant]) -> Double? {
        let rates = participants.filter(\.expectsAudio).flatMap { $0.statistics.windowRates.values }
        let expected = rates.reduce(0) { $0 + $1.expected }
        guard expected > 0 else { return nil }
        let received = Double(rates.reduce(0) { $0 + $1.received })
        return max(0, (expected - received) * 100 / expected)
    }

    /// Each probe's bursts to hear: those its room's burst talker started in the window, a
    /// deadline before its end, and of those the ones it detected.
    func onsetTally(_ participants: [LoadParticipant]) -> (expected: Int, detected: Int) {
        let deadline = UInt64(Self.onsetDeadlineMs * 1e6)
        let steadyFrom = window.from, steadyUntil = window.until
        guard steadyUntil.nanoseconds != .max, steadyUntil.nanoseconds > steadyFrom.nanoseconds + deadline else {
            return (0, 0)
        }
        let last = MediaTime(nanoseconds: steadyUntil.nanoseconds - deadline)
        var tally = (expected: 0, detected: 0)
        for probe in participants where probe.statistics.isProbe && probe.connection.establishedAt != nil {
            let bursts = probe.timeline.bursts(from: steadyFrom, until: last)
            tally.expected += bursts.count
            tally.detected += bursts.filter(probe.statistics.detectedBursts.contains).count
        }
        return tally
    }

    /// Video received in every slot: frames, packets, expected packets, and the subscribers that
    /// should have seen some (a slot and another camera in the room) but saw none.
    private func videoTotals(_ participants: [LoadParticipant], auxiliaries: [LoadParticipant])
        -> (frames: Int, received: Int, expected: Int, subscribers: Int, blind: [String])
    {
        var totals = (frames: 0, received: 0, expected: 0, subscribers: 0, blind: [String]())
        let watches = configuration.video && configuration.slots > 0 && configuration.participants > 1
        // A member's frames arrive on its own connection, or (Janus) on its subscriber connections.
        var framesByMember: [ObjectIdentifier: Int] = [:]
        for connection in participants + auxiliaries {
            totals.frames += connection.statistics.videoFramesReceived
            totals.received += connection.statistics.videoStreams.values.reduce(0) { $0 + $1.received }
            totals.expected += connection.statistics.videoStreams.values.reduce(0) { $0 + $1.expected }
            framesByMember[ObjectIdentifier(connection.owner ?? connection), default: 0] += connection.statistics.videoFramesReceived
        }
        guard watches else { return totals }
        for participant in participants {
            totals.subscribers += 1
            if framesByMember[ObjectIdentifier(participant), default: 0] == 0 { totals.blind.append(participant.userId) }
        }
        return totals
    }
}
