import ChorusCore
import PeerTransport
import RTP

/// Transport-wide congestion control on the client side, as a browser does it when its offer
/// maps the transport-wide sequence number and asks for `transport-cc` feedback, and the
/// server's answer keeps both:
/// - every RTP packet we send (audio, each camera layer) carries our next transport-wide
///   sequence number, so the server's receive side reports its arrivals to us (ignored: the
///   generator's encoders are pre-encoded loops);
/// - every packet the server sends us carries its numbers: their arrivals go into the
///   server's own `TransportFeedbackRecorder`, and every 100 ms what arrived goes back as
///   transport-cc messages (RTCP PT 205 FMT 15, `TransportFeedbackWriter`), which the server's
///   send-side estimator turns into our downlink estimate, and its layer allocation into the
///   layers our slots forward.
extension LoadParticipant {
    /// The next transport-wide sequence number for a packet we send.
    func nextTransportSequence() -> UInt16 {
        defer { transportSequenceNumber &+= 1 }
        return transportSequenceNumber
    }

    /// Notes the arrival of a server packet's transport-wide sequence number, if it has one.
    func recordArrival(_ rtp: RTPPacket, now: MediaTime) {
        guard let data = rtp.headerExtensions.first(id: LoadSDP.transportWideCCExtensionID),
              let sequence = RTPHeaderExtensionData.transportSequenceNumber(data)
        else { return }
        feedbackRecorder?.record(sequence, at: now)
    }

    /// The feedback messages due now, each protected and sent alone (reduced-size RTCP).
    func sendTransportFeedback(now: MediaTime) {
        guard let srtp else { return }
        let messages = feedbackRecorder?.feedback(senderSSRC: SSRC(audioSSRC),
                                                  mediaSSRC: SSRC(videoStreams.keys.first ?? 0), now: now) ?? []
        for message in messages {
            var packet = message
            do {
                try srtp.protectRTCP(&packet)
                send(packet)
                transportFeedbackSent += 1
            } catch {
                errors.append("SRTCP protect (transport-cc): \(error)")
            }
        }
    }
}
