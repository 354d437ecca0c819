/// A ring buffer whose capacity is fixed at creation: it never grows; when full, appending
/// overwrites the oldest element and counts it in `overwrittenCount`.
///
/// Storage is allocated once in `init`; `append`, `removeFirst` and subscripting never allocate.
/// Logical index 0 is the oldest element; the physical slot is kept apart from it.
/// Its operations are `@inlinable` so that client modules get them specialized for their
/// element type (unspecialized, every append looked up generic metadata at run time).
public struct RingBuffer<Element>: Sendable where Element: Sendable {
    @usableFromInline var storage: [Element?]
    @usableFromInline var head = 0 // physical slot of the oldest element
    @usableFromInline var storedCount = 0
    @usableFromInline var storedOverwrittenCount: UInt64 = 0

    @inlinable public var count: Int { storedCount }
    /// How many elements were dropped because the buffer was full.
    @inlinable public var overwrittenCount: UInt64 { storedOverwrittenCount }
    @inlinable public var capacity: Int { storage.count }
    @inlinable public var isEmpty: Bool { storedCount == 0 }
    @inlinable public var isFull: Bool { storedCount == capacity }

    @inlinable public init(capacity: Int) {
        precondition(capacity > 0, "RingBuffer capacity must be positive")
        storage = Array(repeating: nil, count: capacity)
    }

    @inlinable func slot(_ logical: Int) -> Int {
        assert(logical >= 0 && logical < storage.count)
        let s = head + logical
        return s >= storage.count ? s - storage.count : s
    }

    /// Appends `element`; returns the element it overwrote, if the buffer was full.
    @inlinable @discardableResult
    public mutating func append(_ element: Element) -> Element? {
        if storedCount < capacity {
            storage[slot(storedCount)] = element
            storedCount += 1
            return nil
        }
        let old = storage[head]
        storage[head] = element
        head = head + 1 == capacity ? 0 : head + 1
        storedOverwrittenCount &+= 1
        return old
    }

    /// Removes and returns the oldest element.
    @inlinable public mutating func removeFirst() -> Element? {
        guard storedCount > 0 else { return nil }
        let e = storage[head]
        storage[head] = nil
        head = head + 1 == capacity ? 0 : head + 1
        storedCount -= 1
        return e
    }

    @inlinable public mutating func removeAll() {
        for i in 0..<capacity { storage[i] = nil }
        head = 0
        storedCount = 0
    }

    /// The element at logical index `i` (0 = oldest).
    @inlinable public subscript(i: Int) -> Element {
        precondition(i >= 0 && i < count, "RingBuffer index \(i) out of range 0..<\(count)")
        return storage[slot(i)]!
    }

    @inlinable public var first: Element? { count > 0 ? self[0] : nil }
    @inlinable public var last: Element? { count > 0 ? self[count - 1] : nil }

    /// Calls `body` for each element, oldest first, without allocating.
    @inlinable public func forEach(_ body: (Element) throws -> Void) rethrows {
        for i in 0..<count { try body(storage[slot(i)]!) }
    }

    /// The elements oldest first (allocates: for tests and tools, not the hot path).
    public var elements: [Element] {
        var out: [Element] = []
        out.reserveCapacity(count)
        forEach { out.append($0) }
        return out
    }
}
