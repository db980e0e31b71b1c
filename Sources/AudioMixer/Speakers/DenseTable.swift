/// Per-participant state kept in one contiguous array with an ID → index map: the room-level
/// detectors walk every participant each tick, and hashing an ID once per tick (then indexing)
/// is what keeps a 500-participant tick cheap. Removal swaps the last entry into the hole, so
/// indices are stable only between removals; callers use them within one tick.
struct DenseTable<ID: Hashable & Sendable, Value: Sendable>: Sendable {
    private(set) var ids: [ID] = []
    var values: [Value] = []
    private var indexByID: [ID: Int] = [:]

    var count: Int { values.count }

    func index(of id: ID) -> Int? { indexByID[id] }

    /// The index of `id`, inserting `make()` first when it is new.
    mutating func index(of id: ID, orInsert make: () -> Value) -> Int {
        if let index = indexByID[id] { return index }
        let index = values.count
        ids.append(id)
        values.append(make())
        indexByID[id] = index
        return index
    }

    /// Removes `id`'s entry; returns its value, nil when absent.
    @discardableResult
    mutating func remove(_ id: ID) -> Value? {
        guard let index = indexByID.removeValue(forKey: id) else { return nil }
        let last = values.count - 1
        let removed = values[index]
        if index != last {
            values[index] = values[last]
            ids[index] = ids[last]
            indexByID[ids[index]] = index
        }
        values.removeLast()
        ids.removeLast()
        return removed
    }

    mutating func removeAll() {
        ids.removeAll(keepingCapacity: true)
        values.removeAll(keepingCapacity: true)
        indexByID.removeAll(keepingCapacity: true)
    }
}
