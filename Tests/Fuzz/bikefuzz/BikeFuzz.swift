import FuzzTargets
import Glibc

// `bikefuzz`: the fuzz targets (docs/testing.md, "Fuzzing").
//   bikefuzz list                         the targets
//   bikefuzz run TARGET PATH...           runs each file (or each file in each directory) once
//   bikefuzz toml-json < FILE             the TOML reader's document as JSON (the differential test)
//   bikefuzz toml-json --stream           the same for each document on stdin (u32 LE length, bytes),
//                                         one JSON line each
// Built with `-sanitize=fuzzer -DFUZZING` (scripts/fuzz.sh) it is a libFuzzer binary instead:
// `BIKEFUZZ_TARGET=toml bikefuzz [libFuzzer flags] [CORPUS...]`.

#if FUZZING
/// The target libFuzzer runs: `BIKEFUZZ_TARGET`.
let fuzzTarget: FuzzTarget = {
    guard let name = getenv("BIKEFUZZ_TARGET").map({ String(cString: $0) }), let t = FuzzTarget.named(name) else {
        complain("bikefuzz: set BIKEFUZZ_TARGET to one of: \(FuzzTarget.all.map(\.name).joined(separator: ", "))\n")
        exit(2)
    }
    return t
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    fuzzTarget.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<Int32>,
                         _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32

/// SwiftPM links an executable's entry as `main` (`--defsym main=bikefuzz_main`) and libFuzzer
/// brings its own `main`: both run libFuzzer's driver on `fuzzOne`, so whichever the linker keeps
/// (scripts/fuzz.sh links with --allow-multiple-definition) does the same.
@_cdecl("bikefuzz_main")
public func bikefuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var c = argc
    var v = argv
    return LLVMFuzzerRunDriver(&c, &v) { fuzzOne($0, $1) }
}
#else
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
            var count = 0
            for path in args.dropFirst(3) {
                for file in files(at: path) {
                    let bytes = read(file)
                    bytes.withUnsafeBytes { target.run($0) }
                    count += 1
                }
            }
            print("\(target.name): \(count) inputs, no failure")
        case "toml-json":
            tomlJSON()
        default:
            usage()
        }
    }

    static func usage() -> Never {
        let text = """
            usage: bikefuzz list | run TARGET PATH... | toml-json < FILE
                   (a fuzzing build, scripts/fuzz.sh: BIKEFUZZ_TARGET=TARGET bikefuzz [libFuzzer flags] [CORPUS...])
            targets: \(FuzzTarget.all.map(\.name).joined(separator: ", "))

            """
        complain(text)
        exit(2)
    }

    /// `path` itself, or the regular files in it (sorted).
    static func files(at path: String) -> [String] {
        var st = stat()
        guard stat(path, &st) == 0 else { complain("bikefuzz: \(path): no such file\n"); exit(2) }
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
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { complain("bikefuzz: cannot read \(path)\n"); exit(2) }
        defer { close(fd) }
        return readAll(fd)
    }

    static func readAll(_ fd: Int32) -> [UInt8] {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            out += chunk[0..<n]
        }
        return out
    }

    /// Exactly `n` bytes from `fd`, or nil at its end.
    static func readExactly(_ fd: Int32, _ n: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: n)
        var done = 0
        while done < n {
            let r = out.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + done, n - done) }
            if r <= 0 { return nil }
            done += r
        }
        return out
    }

    static func tomlJSON() {
        guard CommandLine.arguments.dropFirst(2).first == "--stream" else {
            emit(TOMLJSON.document(readAll(0)) + "\n")
            return
        }
        while let header = readExactly(0, 4) {
            let n = Int(header[0]) | Int(header[1]) << 8 | Int(header[2]) << 16 | Int(header[3]) << 24
            guard let doc = n == 0 ? [] : readExactly(0, n) else { break }
            emit(TOMLJSON.document(doc) + "\n")
        }
    }
}
#endif

/// Text to a descriptor, unbuffered (stdout for answers, stderr for complaints).
func write(_ text: String, to fd: Int32) {
    let bytes = Array(text.utf8)
    var done = 0
    while done < bytes.count {
        let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, bytes.count - done) }
        if n <= 0 { return }
        done += n
    }
}

func emit(_ text: String) { write(text, to: 1) }
func complain(_ text: String) { write(text, to: 2) }
