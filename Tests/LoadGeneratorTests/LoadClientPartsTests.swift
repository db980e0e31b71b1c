import ChorusCore
import Testing

@testable import LoadGenerator

/// The generator's own measurement parts: if they lie, every load figure lies.
@Suite("Load generator: audio, answer parsing, reception figures")
struct LoadClientPartsTests {
    /// The probes find the burst talker's 1 kHz tone in a mix and nothing else: the other
    /// talkers' speech-like signal stays under 1 kHz, silence scores 0.
    @Test func burstToneIsFoundAndSpeechIsNot() {
        let burst = LoadAudio.frame(.burst, index: 3)
        let speech = LoadAudio.frame(.speech, index: 7)
        let mixed = zip(burst, speech).map { Int16(clamping: Int($0) + Int($1)) }
        let silence = LoadAudio.frame(.silence, index: 0)
        let pause = LoadAudio.frame(.burst, index: 45)  // the talker's pause: no voice, no tone
        let voice = LoadAudio.frame(.burst, index: 20)  // the burst talker's voice between bursts
        #expect(burst.withUnsafeBufferPointer(LoadAudio.burstShare) > 0.6)  // the tone over the talker's voice
        #expect(mixed.withUnsafeBufferPointer(LoadAudio.burstShare) > 0.3)
        #expect(speech.withUnsafeBufferPointer(LoadAudio.burstShare) < 0.05)
        #expect(silence.withUnsafeBufferPointer(LoadAudio.burstShare) == 0)
        #expect(pause.withUnsafeBufferPointer(LoadAudio.burstShare) == 0)
        #expect(voice.withUnsafeBufferPointer(LoadAudio.burstShare) < 0.05)
        #expect(LoadAudio.frame(.burst, index: 53).withUnsafeBufferPointer(LoadAudio.burstShare) > 0.3)
    }

    /// Pre-encoded loops: one Opus payload and one RFC 6464 level per frame; bursts start at 0.
    @Test func encodedLoops() throws {
        let burst = try LoadAudio.make(.burst)
        let silence = try LoadAudio.make(.silence)
        #expect(burst.frames.count == 150 && burst.levels.count == 150 && burst.burstStarts == [0, 50, 100])
        // Tone at the start of each second, voice in most frames until the pause (40…49).
        #expect(burst.levels[0] < 20 && burst.levels[45] == 127)
        #expect(burst.levels[10..<40].filter { $0 < 60 }.count > 10)
        #expect(silence.levels == [127])
    }

    /// The transport a client needs, from an answer shaped like the server's (candidate
    /// repeated per section, passive setup).
    @Test func answerParsing() throws {
        let answer = """
            v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=ice-lite\r\na=ice-ufrag:abcd\r\n\
            a=ice-pwd:0123456789abcdefghijkl\r\na=fingerprint:sha-256 \(Array(repeating: "AB", count: 32).joined(separator: ":"))\r\n\
            a=setup:passive\r\nm=audio 40000 UDP/TLS/RTP/SAVPF 111\r\n\
            a=candidate:1 1 udp 2130706431 127.0.0.1 40000 typ host\r\na=end-of-candidates\r\n
            """
        let parsed = try LoadSDP.parseAnswer(answer)
        #expect(parsed.ice.ufrag == "abcd" && parsed.host == "127.0.0.1" && parsed.port == 40_000)
        #expect(parsed.serverIsPassive && parsed.fingerprint.digest == Array(repeating: 0xAB, count: 32))
        #expect(throws: LoadSDP.AnswerError.self) { try LoadSDP.parseAnswer("v=0\r\n") }
        // No fmtp asks for DTX: a silent participant sends every frame, as a browser would.
        #expect(!parsed.usesDTX)
        let withDTX = answer + "a=rtpmap:111 opus/48000/2\r\na=fmtp:111 minptime=10;useinbandfec=1;usedtx=1\r\n"
        #expect(try LoadSDP.parseAnswer(withDTX).usesDTX)
        let refused = answer + "a=fmtp:111 minptime=10;usedtx=0;useinbandfec=1\r\n"
        #expect(try !LoadSDP.parseAnswer(refused).usesDTX)
        #expect(try LoadAudio.make(.silence).isSilence && !LoadAudio.make(.speech).isSilence)
    }

    /// Loss from extended sequence numbers across the wrap, and RFC 3550 jitter: none for a
    /// steady stream, about the spread for one that alternates ±5 ms.
    @Test func lossAndJitter() {
        var steady = ReceivedStream(clockRate: 48_000)
        var shaky = ReceivedStream(clockRate: 48_000)
        var sequence: UInt16 = 65_500
        for index in 0..<200 {
            let at = MediaTime(nanoseconds: 1_000_000_000 + UInt64(index) * 20_000_000)
            if index % 10 != 3 {  // 20 lost
                steady.received(sequenceNumber: sequence, timestamp: UInt32(index * 960), arrival: at)
            }
            let wobble: UInt64 = index % 2 == 0 ? 0 : 10_000_000
            shaky.received(sequenceNumber: sequence, timestamp: UInt32(index * 960), arrival: at.adding(nanoseconds: wobble))
            sequence &+= 1
        }
        #expect(steady.expected == 200 && steady.received == 180 && steady.lost == 20)
        #expect(steady.jitterMilliseconds < 0.01)
        #expect(shaky.lost == 0 && abs(shaky.jitterMilliseconds - 10) < 1.5)
        let interval = steady.interval()
        #expect(interval.received == 180 && interval.expected == 200)
        #expect(steady.interval().received == 0)
    }

    /// A listener in DTX is passed over by the shard's loop until its next comfort-noise update
    /// (one frame in 20): the update must be the first frame from the next index that is a
    /// multiple of 20, never later (a late update is a gap the server sees as loss of timing).
    @Test func dtxListenerWakesForItsNextUpdate() {
        let due = MediaTime(nanoseconds: 1_000_000_000)
        #expect(LoadMicrophone.nextDTXUpdate(from: due, frameIndex: 40) == due)
        #expect(LoadMicrophone.nextDTXUpdate(from: due, frameIndex: 39) == due.adding(milliseconds: 20))
        #expect(LoadMicrophone.nextDTXUpdate(from: due, frameIndex: 41) == due.adding(milliseconds: 380))
        #expect(LoadMicrophone.nextDTXUpdate(from: due, frameIndex: 1) == due.adding(milliseconds: 380))
    }
}
