import CBuildInfo

/// The project's one version, declared here and nowhere else (docs/releasing.md says how a
/// release bumps it). Every executable prints `ProjectVersion.text(...)` for `--version`, `ctl
/// status` reports it, and the FIT file carries it (file_creator and the unit's device_info).
public enum ProjectVersion {
    public static let major = 0
    public static let minor = 1
    public static let patch = 0

    /// "0.1.0".
    public static var string: String { "\(major).\(minor).\(patch)" }

    /// The git commit the binary was built from (`git describe --always --dirty`), or nil when
    /// the build did not pass it in (a plain `swift build`; scripts/build-release.sh does).
    public static var commit: String? {
        let c = String(cString: bike_build_commit())
        return c.isEmpty ? nil : c
    }

    /// "bikesim 0.1.0 (commit v0.1.0-3-gabc1234)", or "... (commit not recorded: ...)".
    public static func text(_ program: String) -> String {
        "\(program) \(string) (" + (commit.map { "commit \($0)" } ?? "commit not recorded: build with scripts/build-release.sh") + ")"
    }

    /// FIT's software_version fields hold version × 100 in a uint16, the convention of Garmin's
    /// own units: major × 100 + minor (0.1.x → 1, which decoders show as 0.01). The patch
    /// level does not fit.
    public static var fitSoftwareVersion: UInt16 { UInt16(clamping: major * 100 + min(minor, 99)) }

    /// The same number as the ride metadata value `device.software_version` ("0.01"), which
    /// the FIT encoder turns back into `fitSoftwareVersion`.
    public static var fitVersionText: String {
        let m = min(minor, 99)
        return "\(major)." + (m < 10 ? "0" : "") + "\(m)"
    }

    /// Ride metadata key of the software version that recorded the ride.
    public static let metadataKey = "device.software_version"
}
