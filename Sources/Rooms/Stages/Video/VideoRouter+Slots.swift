import ChorusCore
import VideoForwarder

/// Who each subscriber's slots show: recomputed when a publisher comes, goes, pauses or
/// resumes, a pin list or the dominant speaker changes. A slot whose publisher changes keeps
/// forwarding the old one until the new one's keyframe, which is requested at once; the
/// subscriber is told with a `video.slots` event.
extension VideoRouter {
    /// Recomputes every subscriber's slots (a publisher came, went, paused or resumed; a pin
    /// list or the dominant speaker changed). A slot whose publisher changes keeps forwarding
    /// the old one until the new one's keyframe, which is requested now; the subscriber is told
    /// with a `video.slots` event.
    mutating func reassignSlots(now: MediaTime, budgets: VideoBudgets, into output: inout RoomOutput) {
        // No viewer has a slot (an audio-only room): nothing to assign. One pass over the
        // video members (none in an audio-only room), where the full recomputation below costs
        // hash lookups per participant on every join, leave and dominant-speaker change:
        // quadratic over a big room's join ramp.
        guard members.contains(where: { !$0.slots.isEmpty }) else {
            slotViewers.removeAll(keepingCapacity: true)
            return
        }
        let publishers = members.compactMap { member -> CallID? in
            guard member.established, !member.paused, member.publisher?.isShowable == true else { return nil }
            return member.callId
        }
        for viewer in members where !viewer.slots.isEmpty && viewer.established {
            let subscriber = viewer.callId
            // Each camera only in a slot of its own codec (a viewer's slots may differ: VP8 and H.264).
            let wanted = SlotAssignment.assign(
                slotKinds: viewer.slots.map(\.codec), subscriber: subscriber, publishers: publishers,
                kind: { [byCallId] in byCallId[$0]?.publisher?.codec }, pinned: viewer.pinned,
                recentSpeakers: recentSpeakers, current: viewer.slots.map(\.assigned))
            var changed = false
            for (index, target) in wanted.enumerated() where viewer.slots[index].assigned != target {
                changed = true
                assign(target, toSlot: index, of: viewer, now: now, budgets: budgets, into: &output)
            }
            if changed { emitSlots(of: viewer, now: now, into: &output) }
        }
        indexViewers()
    }

    /// Rebuilds `slotViewers` from every subscriber's slots.
    private mutating func indexViewers() {
        slotViewers.removeAll(keepingCapacity: true)
        for viewer in members {
            let subscriber = viewer.callId
            for (index, slot) in viewer.slots.enumerated() {
                if let publisher = slot.publisher { slotViewers[publisher, default: []].append((subscriber, index)) }
                if let pending = slot.pending, pending != slot.publisher {
                    slotViewers[pending, default: []].append((subscriber, index))
                }
            }
        }
    }

    private func assign(_ publisher: CallID?, toSlot index: Int, of viewer: VideoMember, now: MediaTime,
                        budgets: VideoBudgets, into output: inout RoomOutput) {
        guard let publisher else {
            viewer.slots[index].publisher = nil
            viewer.slots[index].pending = nil
            viewer.slots[index].rewriter.clearSource()
            return
        }
        if viewer.slots[index].publisher == publisher {
            viewer.slots[index].pending = nil  // back to the one it shows
            return
        }
        let layer = initialLayer(of: publisher, for: viewer, slot: index, now: now, budget: budgets(viewer.callId))
        viewer.slots[index].pending = publisher
        viewer.slots[index].targetLayer = layer
        viewer.slots[index].targetTemporalLayer = TemporalLayerFilter.allLayers
        viewer.slots[index].targetRID = rid(of: publisher, layer: layer)
        requestKeyframe(from: publisher, layer: layer, now: now, into: &output)
    }

    /// `video.slots`: the subscriber's whole slot list, one entry per slot in m-line order.
    func emitSlots(of viewer: VideoMember, now: MediaTime, into output: inout RoomOutput) {
        let slots = viewer.slots.enumerated().map { index, slot in
            var entry = SlotAssignmentEvent(slot: index, mid: slot.mid)
            if let publisher = slot.assigned {
                entry.publisher = eventMember(publisher)
                // The layer it shows or moves to: its RID with simulcast, else 0.
                entry.layer = slot.targetLayer
                entry.rid = rid(of: publisher, layer: slot.targetLayer)
            }
            // Nothing is forwarded while the subscriber's downlink cannot carry even the lowest layer.
            entry.pausedForBandwidth = slot.pausedForBandwidth
            return entry
        }
        output.emit(.videoSlots(eventMember(viewer.callId), slots: slots), at: now)
    }
}
