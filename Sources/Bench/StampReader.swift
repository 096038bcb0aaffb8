import MediaCore
import StampedSource
import Foundation
import Synchronization

/// Reads raw grey pictures from a reader's stdout and the stamp in each. With `judge`, each
/// picture is also compared with the test pattern drawn again for its stamp (PictureCheck):
/// readable but smeared pictures count as damaged; the same picture again (a held one) counts
/// as a repeat and adds no latency sample.
final class StampReader: Sendable {
    struct Sample { let counter: UInt32; let captureMs: Int64; let receivedMs: Int64 }
    let width: Int, height: Int
    private let samples = Mutex<[Sample]>([])
    private let misreads = Atomic<Int>(0)
    private let damaged = Atomic<Int>(0)
    private let repeats = Atomic<Int>(0)
    private let recording = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    init(handle: FileHandle, width: Int, height: Int, judge: Bool = false) {
        self.width = width
        self.height = height
        let t = Thread { [self] in
            let frameSize = width * height
            var buffer = [UInt8](repeating: 0, count: frameSize)
            var filled = 0
            var last: UInt32?
            let fd = handle.fileDescriptor
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, frameSize - filled) }
                if n <= 0 { break }
                filled += n
                guard filled == frameSize else { continue }
                filled = 0
                let now = MonotonicClock.wallMilliseconds()
                guard recording.load(ordering: .relaxed) else { continue }
                var stamp: Stamp?
                if judge {
                    let verdict = buffer.withUnsafeBufferPointer { PictureCheck.judge(luma: $0.baseAddress!, stride: width, width: width, height: height) }
                    switch verdict {
                    case .unreadable: break
                    case .clean(let s, _): stamp = s
                    case .damaged(let s, _):
                        stamp = s
                        if s.frameNumber != last { damaged.add(1, ordering: .relaxed) }
                    }
                    if let s = stamp, s.frameNumber == last { repeats.add(1, ordering: .relaxed); continue }
                    last = stamp?.frameNumber ?? last
                } else {
                    stamp = buffer.withUnsafeBufferPointer { StampCodec.read(luma: $0.baseAddress!, stride: width, width: width, height: height) }
                }
                if let stamp {
                    samples.withLock { $0.append(Sample(counter: stamp.frameNumber, captureMs: stamp.captureMillis, receivedMs: now)) }
                } else {
                    misreads.add(1, ordering: .relaxed)
                }
            }
            done.signal()
        }
        t.name = "stamp-reader"
        t.start()
    }

    func startRecording() { recording.store(true, ordering: .relaxed) }
    func stopRecording() { recording.store(false, ordering: .relaxed) }
    var all: [Sample] { samples.withLock { $0 } }
    var misreadCount: Int { misreads.load(ordering: .relaxed) }
    var damagedCount: Int { damaged.load(ordering: .relaxed) }
    var repeatCount: Int { repeats.load(ordering: .relaxed) }
}

/// One row of the results.
struct ScenarioResult {
    var name: String
    var path: String
    var latencies: [Double]
    var frames: Int
    var dropped: Int
    var outOfOrder: Int
    var misreads: Int
    /// Impaired runs: readable pictures that differ from what the source drew (smeared), and
    /// pictures shown again (held).
    var damaged: Int?
    var repeats: Int?
    var cpuPercent: Double?
    var rssMiB: Double?
    /// The share of the machine idle while the row's group was measured (0…1).
    var machineIdle: Double?
    var note: String = ""
    /// Percentiles measured elsewhere (the relay's own histograms): 50, 90, 99, max.
    var fixed: [Double: Double] = [:]

    func percentile(_ p: Double) -> Double? {
        guard !latencies.isEmpty else { return fixed[p] }
        let s = latencies.sorted()
        return s[min(s.count - 1, Int((p / 100 * Double(s.count)).rounded(.down)))]
    }
}

