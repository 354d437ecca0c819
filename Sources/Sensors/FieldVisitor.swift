/// Receives a decoded payload's fields by name (snake_case, SI or the profile's own unit named in
/// the key), for `bikecomputer decode` and logs. The device path uses `NoFields`, which the
/// compiler removes entirely.
public protocol FieldVisitor {
    mutating func int(_ name: String, _ value: Int64)
    mutating func double(_ name: String, _ value: Double)
    mutating func bool(_ name: String, _ value: Bool)
    mutating func string(_ name: String, _ value: String)
    /// A list of numbers (RR intervals).
    mutating func doubles(_ name: String, count: Int, _ value: (Int) -> Double)
    /// A list of records with fields of their own (radar targets); `record` writes record `i`'s.
    mutating func records(_ name: String, count: Int, _ record: (Int, inout Self) -> Void)
    /// A number the payload may not give: written as null when absent (a record's fixed shape).
    mutating func optionalDouble(_ name: String, _ value: Double?)
}

/// A visitor that ignores every field.
public struct NoFields: FieldVisitor {
    public init() {}
    @inlinable public mutating func int(_ name: String, _ value: Int64) {}
    @inlinable public mutating func double(_ name: String, _ value: Double) {}
    @inlinable public mutating func bool(_ name: String, _ value: Bool) {}
    @inlinable public mutating func string(_ name: String, _ value: String) {}
    @inlinable public mutating func doubles(_ name: String, count: Int, _ value: (Int) -> Double) {}
    @inlinable public mutating func records(_ name: String, count: Int, _ record: (Int, inout Self) -> Void) {}
    @inlinable public mutating func optionalDouble(_ name: String, _ value: Double?) {}
}

extension FieldVisitor {
    @inlinable mutating func int<T: BinaryInteger>(_ name: String, _ value: T?) {
        if let value { int(name, Int64(value)) }
    }
    @inlinable mutating func double(_ name: String, _ value: Double?) {
        if let value { double(name, value) }
    }
}
