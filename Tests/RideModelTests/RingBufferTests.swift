import TestSupport
import Testing
@testable import RideModel

struct RingBufferTests {
    @Test func overwritesOldestAndCountsIt() {
        var r = RingBuffer<Int>(capacity: 3)
        #expect(r.append(1) == nil)
        #expect(r.append(2) == nil)
        #expect(r.append(3) == nil)
        #expect(r.isFull)
        #expect(r.append(4) == 1)
        #expect(r.append(5) == 2)
        #expect(r.elements == [3, 4, 5])
        #expect(r.overwrittenCount == 2)
        #expect(r.first == 3 && r.last == 5)
        #expect(r.removeFirst() == 3)
        #expect(r.elements == [4, 5])
        #expect(r.count == 2)
    }

    /// Random appends and removals against an array model, across many wrap-arounds.
    @Test(arguments: [1, 2, 7, 64])
    func matchesArrayModel(capacity: Int) {
        let seed = UInt64(capacity) &* 7919
        var rng = SeededRandom(seed: seed)
        var ring = RingBuffer<Int>(capacity: capacity)
        var model: [Int] = []
        var overwritten: UInt64 = 0
        for step in 0..<5_000 {
            if Int.random(in: 0..<4, using: &rng) == 0 {
                let got = ring.removeFirst()
                let want = model.isEmpty ? nil : model.removeFirst()
                #expect(got == want, "seed \(seed) step \(step)")
            } else {
                let v = step
                let dropped = ring.append(v)
                model.append(v)
                if model.count > capacity {
                    #expect(dropped == model.removeFirst(), "seed \(seed) step \(step)")
                    overwritten += 1
                } else {
                    #expect(dropped == nil)
                }
            }
            #expect(ring.count <= capacity)
            #expect(ring.count == model.count)
        }
        #expect(ring.elements == model)
        #expect(ring.overwrittenCount == overwritten)
        #expect(ring.capacity == capacity)
    }
}
