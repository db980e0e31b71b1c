/// Which publisher each of a subscriber's video slots shows: the rule that lets a client see
/// the most relevant N people without renegotiating.
///
/// Ranking: the subscriber's pinned publishers (in its order), then the room's most recent
/// dominant speakers (most recent first), then everyone else in join order; never the
/// subscriber itself, and only publishers that can be shown (sending, not paused, a codec the
/// subscriber's slots accept). The top `slots` are shown.
///
/// Placement is stable, so a slot changes publisher only when it must (a switch costs a
/// keyframe): pinned publishers take the first slots in pin order; every other chosen
/// publisher keeps the slot it already has; newcomers fill the free slots in rank order.
/// A pure function, driven by the room whenever a publisher, a pin list or the dominant
/// speaker changes.
///
/// Slots that negotiated different codecs (a subscriber whose slot sections offered VP8 on one
/// and only H.264 on another) use `assign(slotKinds:…)`: forwarding never transcodes, so a
/// publisher may only go into a slot of its own codec.
public enum SlotAssignment {
    /// The rule above for slots that each accept one kind of stream (the codec the slot
    /// negotiated): a publisher goes only into a slot of its own kind (`kind`; nil: none).
    /// The slots of each kind are shared among the publishers of that kind by
    /// `assign(slots:…)`, so ranking, pins (the first slots *of their kind*, in pin order) and
    /// stable placement hold within each kind; with one kind this is exactly
    /// `assign(slots:…)`. A publisher of a kind no slot has is not shown.
    public static func assign<ID: Hashable, Kind: Hashable>(
        slotKinds: [Kind], subscriber: ID, publishers: [ID], kind: (ID) -> Kind?, pinned: [ID],
        recentSpeakers: [ID], current: [ID?]
    ) -> [ID?] {
        var result = [ID?](repeating: nil, count: slotKinds.count)
        var kinds: [Kind] = []
        for slotKind in slotKinds where !kinds.contains(slotKind) { kinds.append(slotKind) }
        let publisherKinds = publishers.map(kind)
        for slotKind in kinds {
            let indices = slotKinds.indices.filter { slotKinds[$0] == slotKind }
            let candidates = zip(publishers, publisherKinds).compactMap { $1 == slotKind ? $0 : nil }
            let placed = assign(
                slots: indices.count, subscriber: subscriber, publishers: candidates, pinned: pinned,
                recentSpeakers: recentSpeakers, current: indices.map { $0 < current.count ? current[$0] : nil })
            for (index, id) in zip(indices, placed) { result[index] = id }
        }
        return result
    }

    public static func assign<ID: Hashable>(
        slots: Int, subscriber: ID, publishers: [ID], pinned: [ID], recentSpeakers: [ID], current: [ID?]
    ) -> [ID?] {
        guard slots > 0 else { return [] }
        let eligible = Set(publishers).subtracting([subscriber])
        var ranked: [ID] = []
        var seen = Set<ID>()
        for id in pinned + recentSpeakers + publishers where eligible.contains(id) && seen.insert(id).inserted {
            ranked.append(id)
            if ranked.count == slots { break }
        }
        var result = [ID?](repeating: nil, count: slots)
        var placed = Set<ID>()
        // Pinned publishers in the first slots, in pin order.
        var next = 0
        for id in pinned where eligible.contains(id) && ranked.contains(id) && !placed.contains(id) && next < slots {
            result[next] = id
            placed.insert(id)
            next += 1
        }
        // Others keep their slot when it is free.
        for (slot, id) in current.prefix(slots).enumerated() {
            guard let id, result[slot] == nil, ranked.contains(id), !placed.contains(id) else { continue }
            result[slot] = id
            placed.insert(id)
        }
        // Newcomers fill the remaining slots in rank order.
        var free = result.indices.filter { result[$0] == nil }.makeIterator()
        for id in ranked where !placed.contains(id) {
            guard let slot = free.next() else { break }
            result[slot] = id
            placed.insert(id)
        }
        return result
    }
}
