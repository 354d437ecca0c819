import RideModel
import TestSupport
import Testing
@testable import Positioning

@Suite struct BreadcrumbTests {
    static let degPerM = 1 / 111_200.0

    /// A 200 km ride at 1 Hz fits: never more than `pointsMax` points, the spacing doubles as it
    /// thins, and the kept track still spans the whole ride (its box is the ride's box).
    @Test func aLongRideFitsAndKeepsItsShape() {
        var b = Breadcrumb()
        var rng = SeededRandom(seed: 11)
        var lat = 46.0, lon = 7.0, heading = 0.3
        var box = (minLat: lat, maxLat: lat, minLon: lon, maxLon: lon)
        for _ in 0..<(200_000 / 8) {
            heading += rng.double(-0.05...0.05)
            lat += 8 * Self.degPerM * heading.cosine
            lon += 8 * Self.degPerM * heading.sine / 0.69
            box = (min(box.minLat, lat), max(box.maxLat, lat), min(box.minLon, lon), max(box.maxLon, lon))
            b.add(latDeg: lat, lonDeg: lon)
            #expect(b.count <= Breadcrumb.pointsMax)
        }
        #expect(b.spacingM >= 200_000 / Double(Breadcrumb.pointsMax))
        #expect(b.count > Breadcrumb.pointsMax / 2 - 1)
        let bounds = b.bounds!
        let heightM = (box.maxLat - box.minLat) / Self.degPerM
        #expect(abs((bounds.maxNorthM - bounds.minNorthM) - heightM) < max(2 * b.spacingM, heightM * 0.02))
        // Consecutive kept points are about the spacing apart (never much more: nothing lost).
        for i in 1..<b.count {
            let p = b.point(i), q = b.point(i - 1)
            let d = ((p.eastM - q.eastM) * (p.eastM - q.eastM) + (p.northM - q.northM) * (p.northM - q.northM)).squareRoot()
            #expect(d < 4 * b.spacingM + 10, "gap of \(d) m at \(i)")
        }
    }

    @Test func pointsCloserThanTheSpacingOnlyMoveTheCurrentPosition() {
        var b = Breadcrumb()
        b.add(latDeg: 46, lonDeg: 7)
        b.add(latDeg: 46 + 2 * Self.degPerM, lonDeg: 7)
        #expect(b.count == 1)
        #expect(abs(b.current!.northM - 2) < 0.01)
        b.add(latDeg: 46 + 6 * Self.degPerM, lonDeg: 7)
        #expect(b.count == 2)
    }

    /// A lost fix breaks the line: the next point starts a new piece, and thinning keeps it so.
    @Test func breaksSurviveThinning() {
        var b = Breadcrumb()
        for k in 0..<300 {
            if k == 101 { b.breakTrack() }
            b.add(latDeg: 46 + Double(k) * 10 * Self.degPerM, lonDeg: 7)
        }
        let starts = (0..<b.count).filter { b.point($0).startsPiece }
        #expect(starts.count == 1)
        #expect(!b.point(0).startsPiece)
    }

    @Test func equalityAndCopiesAreByValue() {
        var a = Breadcrumb()
        a.add(latDeg: 46, lonDeg: 7)
        var c = a
        #expect(a == c)
        c.add(latDeg: 46.01, lonDeg: 7)
        #expect(a != c && a.count == 1 && c.count == 2)
    }
}

extension Double {
    var cosine: Double { Double.cosLike(self) }
    var sine: Double { Double.cosLike(self - Double.pi / 2) }

    /// cos by its series (|x| < 4): the tests need a heading, not precision.
    static func cosLike(_ x: Double) -> Double {
        var term = 1.0, sum = 1.0
        for k in 1..<20 { term *= -x * x / Double((2 * k - 1) * (2 * k)); sum += term }
        return sum
    }
}
