/// The loop's timers: a binary min-heap ordered by (deadline, sequence), so timers fire in
/// deadline order and equal deadlines in scheduling order. Cancelled timers are dropped lazily
/// when they reach the top; the heap is compacted when stale entries outnumber live ones.
struct TimerQueue {
    struct Entry {
        var deadlineNs: UInt64
        var sequence: UInt64
        var id: UInt64
    }

    struct Timer {
        var name: StaticString
        var statsSlot: Int
        var deadlineNs: UInt64
        var sequence: UInt64
        var periodNs: UInt64?
        var handler: () -> Void
    }

    private var heap: [Entry] = []
    private(set) var live: [UInt64: Timer] = [:]
    private var nextID: UInt64 = 1
    private var nextSequence: UInt64 = 0

    init() { heap.reserveCapacity(64) }

    var count: Int { live.count }

    mutating func schedule(_ name: StaticString, statsSlot: Int, deadlineNs: UInt64, periodNs: UInt64?,
                           _ handler: @escaping () -> Void) -> TimerID {
        precondition(live.count < EventLoopLimits.timersMax, "more than \(EventLoopLimits.timersMax) live timers (EventLoopLimits.timersMax)")
        let id = nextID
        nextID += 1
        live[id] = Timer(name: name, statsSlot: statsSlot, deadlineNs: deadlineNs, sequence: 0, periodNs: periodNs, handler: handler)
        push(id: id, deadlineNs: deadlineNs)
        return TimerID(rawValue: id)
    }

    mutating func cancel(_ id: TimerID) {
        live[id.rawValue] = nil
        if heap.count > 2 * live.count + 64 { compact() }
    }

    /// The earliest live deadline.
    mutating func earliestDeadlineNs() -> UInt64? {
        dropStaleTop()
        return heap.first?.deadlineNs
    }

    /// Removes and returns the earliest timer due at `nowNs`; periodic timers are re-queued at
    /// their next deadline after `nowNs` (skipped periods are counted in `skipped`).
    /// With `skipLate` false (manual time) every period fires, however far `nowNs` is ahead.
    mutating func popDue(nowNs: UInt64, skipLate: Bool = true, skipped: inout UInt64) -> (TimerID, Timer)? {
        dropStaleTop()
        guard let top = heap.first, top.deadlineNs <= nowNs, let timer = live[top.id] else { return nil }
        removeTop()
        if let period = timer.periodNs, period > 0 {
            var next = timer.deadlineNs + period
            if skipLate && next <= nowNs {
                let behind = (nowNs - timer.deadlineNs) / period
                skipped += behind
                next = timer.deadlineNs + (behind + 1) * period
            }
            live[top.id]!.deadlineNs = next
            push(id: top.id, deadlineNs: next)
        } else {
            live[top.id] = nil
        }
        return (TimerID(rawValue: top.id), timer)
    }

    // MARK: Heap

    private mutating func push(id: UInt64, deadlineNs: UInt64) {
        let seq = nextSequence
        nextSequence += 1
        live[id]?.sequence = seq
        heap.append(Entry(deadlineNs: deadlineNs, sequence: seq, id: id))
        siftUp(heap.count - 1)
    }

    private func isStale(_ e: Entry) -> Bool {
        guard let t = live[e.id] else { return true }
        return t.sequence != e.sequence
    }

    private mutating func dropStaleTop() {
        while let top = heap.first, isStale(top) { removeTop() }
    }

    private mutating func removeTop() {
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            siftDown(0)
        }
    }

    private mutating func compact() {
        let liveTimers = live
        heap.removeAll { e in liveTimers[e.id].map { $0.sequence != e.sequence } ?? true }
        for i in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(i) }
    }

    private static func less(_ a: Entry, _ b: Entry) -> Bool {
        a.deadlineNs != b.deadlineNs ? a.deadlineNs < b.deadlineNs : a.sequence < b.sequence
    }

    private mutating func siftUp(_ start: Int) {
        var i = start
        while i > 0 {
            let parent = (i - 1) / 2
            guard Self.less(heap[i], heap[parent]) else { return }
            heap.swapAt(i, parent)
            i = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var i = start
        while true {
            let l = 2 * i + 1, r = l + 1
            var smallest = i
            if l < heap.count, Self.less(heap[l], heap[smallest]) { smallest = l }
            if r < heap.count, Self.less(heap[r], heap[smallest]) { smallest = r }
            if smallest == i { return }
            heap.swapAt(i, smallest)
            i = smallest
        }
    }
}
