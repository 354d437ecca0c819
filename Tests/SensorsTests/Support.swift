import TestSupport
import RideModel
@testable import Sensors


func payload(_ bytes: [UInt8]) -> Payload { Payload(bytes)! }

func hexPayload(_ hex: String) -> Payload { Payload(hex: hex)! }

func ms(_ v: Int64) -> MonotonicInstant { MonotonicInstant(milliseconds: v) }

/// Little-endian byte writer for building expected payloads independently of the decoders.
struct LE {
    var bytes: [UInt8] = []
    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { bytes.append(UInt8(v & 0xFF)); bytes.append(UInt8(v >> 8)) }
    mutating func s16(_ v: Int16) { u16(UInt16(bitPattern: v)) }
    mutating func u24(_ v: UInt32) { u16(UInt16(v & 0xFFFF)); u8(UInt8(v >> 16)) }
    mutating func u32(_ v: UInt32) { u16(UInt16(v & 0xFFFF)); u16(UInt16(v >> 16)) }
}

/// Collects fields reported by a decoder, for assertions.
struct FieldRecorder: FieldVisitor {
    var ints: [String: Int64] = [:]
    var doubles: [String: Double] = [:]
    var bools: [String: Bool] = [:]
    var strings: [String: String] = [:]
    var lists: [String: [Double]] = [:]
    mutating func int(_ name: String, _ value: Int64) { ints[name] = value }
    mutating func double(_ name: String, _ value: Double) { doubles[name] = value }
    mutating func bool(_ name: String, _ value: Bool) { bools[name] = value }
    mutating func string(_ name: String, _ value: String) { strings[name] = value }
    mutating func doubles(_ name: String, count: Int, _ value: (Int) -> Double) { lists[name] = (0..<count).map(value) }
    /// Records, each recorded apart.
    var records: [String: [FieldRecorder]] = [:]
    mutating func records(_ name: String, count: Int, _ record: (Int, inout FieldRecorder) -> Void) {
        records[name] = (0..<count).map { i in
            var r = FieldRecorder()
            record(i, &r)
            return r
        }
    }
    var nulls: Set<String> = []
    mutating func optionalDouble(_ name: String, _ value: Double?) {
        if let value { doubles[name] = value } else { nulls.insert(name) }
    }
}

func approx(_ a: Double?, _ b: Double, _ tol: Double = 1e-9) -> Bool {
    guard let a else { return false }
    return abs(a - b) <= tol * max(1, abs(b))
}
