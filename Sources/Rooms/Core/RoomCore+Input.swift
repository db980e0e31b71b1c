import ChorusCore
import Foundation
import PeerTransport
import RTCP
import RTP

extension RoomCore {
    /// One datagram the media port routed to `callId`, arriving at `now`. What it causes —
    /// answers, forwarded video, feedback, events, routing — is appended to `output`.
    public func receive(_ datagram: [UInt8], from source: TransportAddress, callId: CallID, now: MediaTime,
                        into output: inout RoomOutput) {
        guard let member = members[callId] else { return }
        switch member.connection.receive(datagram, from: source, now: now, transmits: &output.transmits) {
        case .success(let signal?):
            handle(signal, of: member, now: now, into: &output)
        case .success(nil):
            break
        case .failure(let reason):
            output.counters.drop(reason)
        }
    }

    /// What a member's connection returned, to the stage it concerns: audio to the audio stage,
    /// video to the video router, feedback to each (each RTCP packet decoded once), paths and
    /// call state to the routing table and the events.
    func handle(_ signal: MemberSignal, of member: Member, now: MediaTime, into output: inout RoomOutput) {
        switch signal {
        case .rtp(let rtp):
            if rtp.header.payloadType.rawValue == member.audioPayloadType {
                audio.receive(rtp, from: member.audio, now: now)
            } else {
                video.receive(rtp, from: member.callId, now: now, budgets: { self.bandwidth.budget(of: $0) }, into: &output)
            }
        case .rtcp(let compound):
            receiveFeedback(compound, from: member, now: now, into: &output)
        case .route(let address):
            if member.boundAddresses.insert(address).inserted { output.routing.append(.bind(address, callId: member.callId)) }
        case .pathChanged(let old, let new):
            // The old address stops counting: its datagrams are no longer routed here.
            if member.boundAddresses.insert(new).inserted { output.routing.append(.bind(new, callId: member.callId)) }
            if member.boundAddresses.remove(old) != nil { output.routing.append(.unbind(old)) }
            logger.info("path changed without nomination (NAT rebinding)", metadata: ["callId": "\(member.callId)"])
        case .connected(let security):
            established(member, security: security, now: now, into: &output)
        case .failed(let reason):
            output.counters.handshakesFailed &+= 1
            logger.info("call failed", metadata: ["callId": "\(member.callId)", "reason": "\(reason)"])
            endCall(member.callId, cause: .failed, now: now, into: &output)
        case .closed:
            endCall(member.callId, cause: .hungUp, now: now, into: &output)
        case .consentExpired:
            endCall(member.callId, cause: .timeout, now: now, into: &output)
        }
    }

    /// Each packet of a compound, decoded once, to whoever it concerns: sender reports and
    /// report blocks to the connection (LSR/DLSR, round-trip time) and the audio stage (the mix
    /// encoder's FEC), keyframe requests and NACKs to the video router, estimates to the
    /// bandwidth stage and to the publishers the member watches.
    private func receiveFeedback(_ compound: RTCPCompoundPacket, from member: Member, now: MediaTime,
                                 into output: inout RoomOutput) {
        let connection = member.connection
        for packet in compound {
            switch packet {
            case .senderReport(let report):
                connection.receivedSenderReport(report)
                receiveReportBlocks(report.reportBlocks, from: member, now: now)
            case .receiverReport(let report):
                receiveReportBlocks(report.reportBlocks, from: member, now: now)
            case .receiverEstimatedMaximumBitrate(let remb):
                bandwidth.receiveREMB(remb.bitrate, from: member.callId)
                video.receiveEstimate(remb.bitrate, from: member.callId, now: now)
            case .transportFeedback(let feedback):
                // With transport-cc the subscriber sends no REMB: the server's own estimate of
                // the path toward it takes the REMB's place.
                connection.receivedTransportFeedback(feedback, now: now)
                if let estimate = connection.estimatedBitrate {
                    video.receiveEstimate(UInt64(max(estimate, 0)), from: member.callId, now: now)
                }
            case .goodbye:
                // Not a leave: Chromium sends BYE on replaceTrack, some clients on mute. Counted;
                // a call ends on DELETE, close_notify or consent expiry.
                output.counters.goodbyesReceived &+= 1
            default:
                video.receiveFeedback(packet, from: member.callId, now: now, budgets: { self.bandwidth.budget(of: $0) },
                                      into: &output)
            }
        }
    }

    /// The block about the mix we send the member, to the audio stage (its loss) and the
    /// connection (the round-trip time).
    private func receiveReportBlocks(_ blocks: RTCPItemList<ReportBlock>, from member: Member, now: MediaTime) {
        let ours = audio.outboundSSRC(member.audio)
        guard let block = blocks.first(where: { $0.ssrc == ours }) else { return }
        audio.receiveReport(block, from: member.audio)
        member.connection.receivedReportBlock(block, now: now)
    }

    private func established(_ member: Member, security: String, now: MediaTime, into output: inout RoomOutput) {
        member.state = .established
        member.establishedAt = wallClock.date(at: now)
        member.security = security
        if security != "none" { output.counters.handshakesCompleted &+= 1 }
        audio.setEstablished(member.audio)
        bandwidth.setEstablished(member.callId)
        quality.setEstablished(member.callId)
        output.emit(.participantEstablished(member.eventMember, srtpProfile: security), at: now)
        video.setEstablished(member.callId, now: now, budgets: { self.bandwidth.budget(of: $0) }, into: &output)
    }

    /// Polls the connections whose deadline has passed (a scan per tick, never per packet).
    func pollConnections(now: MediaTime, into output: inout RoomOutput) {
        for member in joinOrder {
            let connection = member.connection
            guard connection.nextDeadline <= now else { continue }
            if let signal = connection.poll(now: now, transmits: &output.transmits) {
                handle(signal, of: member, now: now, into: &output)
            }
        }
    }
}
