import Foundation

#if FUZZING
/// libFuzzer's entry point: `LIVERELAY_FUZZ_TARGET` names the target (scripts/fuzz.sh).
let fuzzTarget = ProcessInfo.processInfo.environment["LIVERELAY_FUZZ_TARGET"] ?? "config"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    FuzzTargets.run(fuzzTarget, Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
#else
/// Without libFuzzer: replays corpus files and `--random N` generated inputs through a target,
/// for the test suite (`liverelay-fuzz TARGET [--random N] FILE…`).
@main
struct FuzzReplay {
    static func main() {
        var args = Array(CommandLine.arguments.dropFirst())
        guard let target = args.first, FuzzTargets.names.contains(target) else {
            FileHandle.standardError.write(Data("usage: liverelay-fuzz \(FuzzTargets.names.joined(separator: "|")) [--random N] FILE…\n".utf8))
            exit(2)
        }
        args.removeFirst()
        var random = 0
        if let i = args.firstIndex(of: "--random"), i + 1 < args.count {
            random = Int(args[i + 1]) ?? 0
            args.removeSubrange(i...i + 1)
        }
        var count = 0
        for path in args {
            guard let d = FileManager.default.contents(atPath: path) else { continue }
            FuzzTargets.run(target, [UInt8](d))
            count += 1
        }
        // Random inputs: mutations of the corpus files (bytes flipped, cut, repeated) and noise.
        let seeds = args.compactMap { FileManager.default.contents(atPath: $0).map { [UInt8]($0) } }
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<random {
            var b = seeds.randomElement(using: &rng) ?? []
            for _ in 0..<Int.random(in: 1...8, using: &rng) {
                switch Int.random(in: 0..<4, using: &rng) {
                case 0 where !b.isEmpty: b[Int.random(in: 0..<b.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                case 1 where !b.isEmpty: b.removeSubrange(Int.random(in: 0..<b.count, using: &rng)...)
                case 2 where !b.isEmpty: b += b[Int.random(in: 0..<b.count, using: &rng)...]
                default: b += (0..<Int.random(in: 1...16, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                }
            }
            // The input about to run is kept: if it stops the process, it is the reproducer.
            if let keep = ProcessInfo.processInfo.environment["LIVERELAY_FUZZ_LAST"] { FileManager.default.createFile(atPath: keep, contents: Data(b)) }
            FuzzTargets.run(target, b)
            count += 1
        }
        print("\(target): \(count) inputs, no crash")
    }
}
#endif
