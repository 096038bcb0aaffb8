import MediaCore
import StampedSource
import Foundation
import Synchronization

/// Reads raw grey pictures from a reader's stdout and the stamp in each.
final class StampReader: Sendable {
    struct Sample { let counter: UInt32; let captureMs: Int64; let receivedMs: Int64 }
    let width: Int, height: Int
    private let samples = Mutex<[Sample]>([])
    private let misreads = Atomic<Int>(0)
    private let recording = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    init(handle: FileHandle, width: Int, height: Int) {
        self.width = width
        self.height = height
        let t = Thread { [self] in
            let frameSize = width * height
            var buffer = [UInt8](repeating: 0, count: frameSize)
            var filled = 0
            let fd = handle.fileDescriptor
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, frameSize - filled) }
                if n <= 0 { break }
                filled += n
                guard filled == frameSize else { continue }
                filled = 0
                let now = MonotonicClock.wallMilliseconds()
                guard recording.load(ordering: .relaxed) else { continue }
                let stamp = buffer.withUnsafeBufferPointer { StampCodec.read(luma: $0.baseAddress!, stride: width, width: width, height: height) }
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
    var cpuPercent: Double?
    var rssMiB: Double?
    var note: String = ""
    /// Percentiles measured elsewhere (the relay's own histograms): 50, 90, 99, max.
    var fixed: [Double: Double] = [:]

    func percentile(_ p: Double) -> Double? {
        guard !latencies.isEmpty else { return fixed[p] }
        let s = latencies.sorted()
        return s[min(s.count - 1, Int((p / 100 * Double(s.count)).rounded(.down)))]
    }
}

