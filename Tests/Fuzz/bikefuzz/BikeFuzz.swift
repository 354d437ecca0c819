import FuzzTargets
import Glibc

// `bikefuzz`: the fuzz targets (docs/testing.md, "Fuzzing").
//   bikefuzz list                         the targets
//   bikefuzz run TARGET PATH...           runs each file (or each file in each directory) once
//   bikefuzz toml-json < FILE             the TOML reader's document as JSON (the differential test)
//   bikefuzz toml-json --stream           the same for each document on stdin (u32 LE length, bytes),
//                                         one JSON line each
// Built with `-sanitize=fuzzer -DFUZZING` (scripts/fuzz.sh), `bikefuzz TARGET [libFuzzer flags]
// [CORPUS...]` runs libFuzzer's driver on TARGET instead.

#if FUZZING
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<Int32>,
                         _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32

/// The target libFuzzer calls (set once, before the driver starts).
nonisolated(unsafe) var fuzzTarget: FuzzTarget?
#endif

@main
struct BikeFuzz {
    static func main() {
        let args = CommandLine.arguments
        guard args.count >= 2 else { usage() }
        switch args[1] {
        case "list":
            for t in FuzzTarget.all { print(t.name) }
        case "run":
            guard args.count >= 3, let target = FuzzTarget.named(args[2]) else { usage() }
            var files = 0
            for path in args.dropFirst(3) {
                for file in files(at: path) {
                    let bytes = read(file)
                    bytes.withUnsafeBytes { target.run($0) }
                    files += 1
                }
            }
            print("\(target.name): \(files) inputs, no failure")
        case "toml-json":
            tomlJSON()
        default:
            #if FUZZING
            guard let target = FuzzTarget.named(args[1]) else { usage() }
            fuzzTarget = target
            // libFuzzer sees the program name and the flags and corpus directories after the target.
            var argv: [UnsafeMutablePointer<CChar>?] = ([args[0]] + args.dropFirst(2)).map { strdup($0) } + [nil]
            var argc = Int32(argv.count - 1)
            let status = argv.withUnsafeMutableBufferPointer { b -> Int32 in
                var p: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = b.baseAddress
                return LLVMFuzzerRunDriver(&argc, &p) { data, size in
                    fuzzTarget!.run(UnsafeRawBufferPointer(start: data, count: size))
                    return 0
                }
            }
            exit(status)
            #else
            usage()
            #endif
        }
    }

    static func usage() -> Never {
        let text = """
            usage: bikefuzz list | run TARGET PATH... | toml-json < FILE
                   (a fuzzing build, scripts/fuzz.sh: bikefuzz TARGET [libFuzzer flags] [CORPUS...])
            targets: \(FuzzTarget.all.map(\.name).joined(separator: ", "))

            """
        fputs(text, stderr)
        exit(2)
    }

    /// `path` itself, or the regular files in it (sorted).
    static func files(at path: String) -> [String] {
        var st = stat()
        guard stat(path, &st) == 0 else { fputs("bikefuzz: \(path): no such file\n", stderr); exit(2) }
        guard (st.st_mode & S_IFMT) == S_IFDIR else { return [path] }
        guard let d = opendir(path) else { return [] }
        defer { closedir(d) }
        var out: [String] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasPrefix(".") { continue }
            out.append(path + "/" + name)
        }
        return out.sorted()
    }

    static func read(_ path: String) -> [UInt8] {
        guard let f = fopen(path, "rb") else { fputs("bikefuzz: cannot read \(path)\n", stderr); exit(2) }
        defer { fclose(f) }
        return readAll(f)
    }

    static func readAll(_ f: UnsafeMutablePointer<FILE>) -> [UInt8] {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, f) }
            if n == 0 { break }
            out += chunk[0..<n]
        }
        return out
    }

    static func tomlJSON() {
        guard CommandLine.arguments.dropFirst(2).first == "--stream" else {
            print(TOMLJSON.document(readAll(stdin)))
            return
        }
        var header = [UInt8](repeating: 0, count: 4)
        while header.withUnsafeMutableBytes({ fread($0.baseAddress, 1, 4, stdin) }) == 4 {
            let n = Int(header[0]) | Int(header[1]) << 8 | Int(header[2]) << 16 | Int(header[3]) << 24
            var doc = [UInt8](repeating: 0, count: n)
            guard n == 0 || doc.withUnsafeMutableBytes({ fread($0.baseAddress, 1, n, stdin) }) == n else { break }
            print(TOMLJSON.document(doc))
            fflush(stdout)
        }
    }
}
