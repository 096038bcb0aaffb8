internal import CFFmpeg
public import MediaCore
public import Demux
import Foundation

/// Settings of the stamped test source, from a `testsrc://` URL such as
/// `testsrc://?size=1280x720&fps=30&gop=30&bitrate=2000&frames=300` (add `bframes=2` for a
/// stream whose decode order differs from its presentation order; `late_keyframe=N` makes
/// every Nth keyframe interval twice as long: a keyframe that comes a GOP late; `codec=hevc`
/// encodes H.265 with libx265 instead of H.264).
public struct TestSourceSettings: Sendable, Hashable {
    public var encoder = EncoderSettings()
    /// Stop after this many frames (0: never).
    public var frames = 0
    /// Pace frames at `fps` on the wall clock (false: as fast as the encoder goes).
    public var realtime = true
    /// Every Nth keyframe interval lasts two GOPs (0: a fixed GOP).
    public var lateKeyframe = 0

    public init() {}

    public static let keys = ["size", "fps", "gop", "bitrate", "frames", "realtime", "preset", "threads", "bframes", "late_keyframe", "codec"]

    /// Parses a `testsrc://` URL; unknown keys and bad values are errors that name the key.
    public init(url: String) throws(IngestError) {
        guard url.lowercased().hasPrefix("testsrc://") else {
            throw IngestError(.failed, source: url, stage: "parsing", detail: "not a testsrc:// URL")
        }
        let query = url.split(separator: "?", maxSplits: 1).dropFirst().first ?? ""
        for pair in query.split(separator: "&") where !pair.isEmpty {
            // "=" alone splits into two empty halves, never zero: no index can be out of range.
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            let key = kv.first ?? "", value = kv.count > 1 ? kv[1] : ""
            guard !key.isEmpty else {
                throw IngestError(.failed, source: url, stage: "parsing", detail: "a query item without a name: \"\(pair)\"")
            }
            func bad(_ expected: String) -> IngestError {
                IngestError(.failed, source: url, stage: "parsing", detail: "\(key): expected \(expected), got \"\(value)\"")
            }
            func int(_ range: ClosedRange<Int>) throws(IngestError) -> Int {
                guard let v = Int(value.hasSuffix("k") ? String(value.dropLast()) : value), range.contains(v) else {
                    throw bad("a whole number in \(range.lowerBound)...\(range.upperBound)")
                }
                return v
            }
            switch key {
            case "size":
                let wh = value.lowercased().split(separator: "x").compactMap { Int($0) }
                guard wh.count == 2, (64...7680).contains(wh[0]), (64...4320).contains(wh[1]), wh[0] % 2 == 0, wh[1] % 2 == 0 else {
                    throw bad("WIDTHxHEIGHT with even sides from 64x64")
                }
                encoder.width = wh[0]; encoder.height = wh[1]
            case "fps": encoder.fps = try int(1...240)
            case "gop": encoder.gop = try int(1...10000)
            case "bitrate": encoder.bitrateKbps = try int(50...200_000)
            case "frames": frames = try int(0...Int(Int32.max))
            case "threads": encoder.threads = try int(0...64)
            case "bframes": encoder.bframes = try int(0...8)
            case "late_keyframe":
                lateKeyframe = try int(0...10_000)
                guard lateKeyframe != 1 else { throw bad("0 (off) or 2 and up (every Nth keyframe comes a GOP late)") }
                encoder.forcedKeyframesOnly = lateKeyframe > 0
            case "realtime":
                guard let b = ["1": true, "true": true, "0": false, "false": false][value.lowercased()] else { throw bad("true or false") }
                realtime = b
            case "preset": encoder.preset = value
            case "codec":
                guard let c = EncoderSettings.Codec(rawValue: value.lowercased()) else { throw bad("h264 or hevc") }
                encoder.codec = c
            default:
                throw IngestError(.failed, source: url, stage: "parsing", detail: "unknown key \"\(key)\" (known: \(TestSourceSettings.keys.joined(separator: ", ")))")
            }
        }
    }
}

/// The built-in live source: renders the test pattern with a stamp (capture wall-clock time
/// and frame counter) in every picture, encodes it with libx264 and yields the packets at the
/// frame rate. Confined to the ingest thread, like any source.
public final class TestSource: PacketSource {
    public let settings: TestSourceSettings
    public let streams: [StreamInfo]
    public let formatName = "testsrc"
    public let interruptHandle: InterruptHandle
    private let encoder: StampEncoder
    private let pattern: TestPattern
    private var frameNumber: UInt32 = 0
    /// With `late_keyframe`: the next frame forced to be a keyframe, and intervals so far.
    private var nextKeyframe = 0
    private var intervals = 0
    private var origin: UInt64?
    private var pending: [Packet] = []
    private let url: String

    public convenience init(url: String, interruptHandle: InterruptHandle = InterruptHandle()) throws(IngestError) {
        try self.init(settings: TestSourceSettings(url: url), interruptHandle: interruptHandle)
    }

    public init(settings: TestSourceSettings, interruptHandle: InterruptHandle = InterruptHandle()) throws(IngestError) {
        self.settings = settings
        self.interruptHandle = interruptHandle
        self.url = "testsrc://"
        do {
            encoder = try StampEncoder(settings: settings.encoder)
        } catch {
            throw IngestError(.failed, source: "testsrc://", stage: "opening", detail: error.description, underlying: error)
        }
        pattern = TestPattern(width: settings.encoder.width, height: settings.encoder.height)
        streams = [StreamInfo(index: 0, timeBase: encoder.timeBase, frameRate: Double(settings.encoder.fps), parameters: encoder.parameters)]
    }

    /// Frames rendered so far.
    public var framesRendered: Int { Int(frameNumber) }

    public func readPacket() throws -> Packet? {
        while pending.isEmpty {
            if interruptHandle.isInterrupted { throw IngestError(.stopped, source: url, stage: "reading", detail: "stopped") }
            if settings.frames > 0 && Int(frameNumber) >= settings.frames {
                pending = try flushEncoder()
                if pending.isEmpty { return nil }
                break
            }
            if settings.realtime { try waitForFrameTime() }
            let capture = MonotonicClock.nanoseconds()
            let stamp = Stamp(captureMillis: MonotonicClock.wallMilliseconds(), frameNumber: frameNumber)
            do {
                let frame = try pattern.render(stamp, pts: Int64(frameNumber), timeBase: encoder.timeBase)
                if settings.lateKeyframe > 0 && Int(frameNumber) == nextKeyframe {
                    frame.withUnsafeMutableAVFrame { $0.pointee.pict_type = AV_PICTURE_TYPE_I }
                    intervals += 1
                    nextKeyframe += settings.encoder.gop * (intervals % settings.lateKeyframe == 0 ? 2 : 1)
                }
                pending = try encoder.encode(frame, arrivalNanos: capture)
            } catch {
                throw IngestError(.failed, source: url, stage: "encoding", detail: error.description, underlying: error)
            }
            frameNumber &+= 1
        }
        return pending.removeFirst()
    }

    private func flushEncoder() throws(IngestError) -> [Packet] {
        do { return try encoder.flush() } catch {
            throw IngestError(.failed, source: url, stage: "encoding", detail: error.description, underlying: error)
        }
    }

    private func waitForFrameTime() throws(IngestError) {
        let now = MonotonicClock.nanoseconds()
        guard let start = origin else { origin = now; return }
        let due = start + UInt64(frameNumber) * 1_000_000_000 / UInt64(settings.encoder.fps)
        var t = now
        while t < due {
            if interruptHandle.isInterrupted { throw IngestError(.stopped, source: url, stage: "reading", detail: "stopped") }
            usleep(UInt32(min(due - t, 10_000_000) / 1000))
            t = MonotonicClock.nanoseconds()
        }
    }
}

@available(*, unavailable)
extension TestSource: Sendable {}
