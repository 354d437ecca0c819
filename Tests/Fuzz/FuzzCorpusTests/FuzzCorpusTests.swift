import FuzzTargets
import Glibc
import Testing

/// Every input of the committed fuzzing corpus (Tests/Fuzz/Corpus/<target>, grown by
/// scripts/fuzz.sh; crashes it found are kept there as regressions) through its target: no
/// crash, and each target's own checks hold.
struct FuzzCorpusTests {
    static let corpus: String = {
        let here = #filePath
        return String(here[..<here.lastIndex(of: "/")!]) + "/../Corpus"
    }()

    static func files(_ target: String) -> [String] {
        let dir = corpus + "/" + target
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var out: [String] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if !name.hasPrefix(".") { out.append(dir + "/" + name) }
        }
        return out.sorted()
    }

    static func read(_ path: String) -> [UInt8] {
        guard let f = fopen(path, "rb") else { return [] }
        defer { fclose(f) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, f) }
            if n == 0 { break }
            out += chunk[0..<n]
        }
        return out
    }

    @Test(arguments: FuzzTarget.all.map(\.name))
    func theCorpusRunsClean(target name: String) throws {
        let target = try #require(FuzzTarget.named(name))
        let inputs = Self.files(name)
        #expect(inputs.count >= 3, "Tests/Fuzz/Corpus/\(name) holds the target's seeds; scripts/fuzz.sh grows it")
        for path in inputs {
            Self.read(path).withUnsafeBytes { target.run($0) }
        }
    }
}
