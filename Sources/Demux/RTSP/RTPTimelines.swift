import Wire

/// One presentation timeline per RTP track, from its 32-bit RTP clock extended to 64 bits, the
/// tracks lined up by when each one's first frame arrived (the first track starts at 0). Both
/// readers of RTP use it: LiveRelay's RTSP client and a WebRTC publisher's `RTPPushSource`.
struct RTPTimelines {
    private struct Track {
        var last: UInt32
        var ext: Int64
        let offset: Int64
        var lastPTS: Int64?
    }

    private var tracks: [Int: Track] = [:]
    private var origin: UInt64?

    /// The presentation time (in the track's clock units) of a frame with RTP `timestamp` that
    /// arrived at `arrival` (nanoseconds).
    mutating func pts(track i: Int, timestamp: UInt32, arrival: UInt64, clockRate: Int) -> Int64 {
        if var t = tracks[i] {
            t.ext += Int64(Int32(bitPattern: timestamp &- t.last))
            t.last = timestamp
            tracks[i] = t
            return t.ext + t.offset
        }
        let o = origin ?? arrival
        origin = o
        let offset = Int64(saturating: Double(arrival &- min(o, arrival)) * Double(clockRate) / 1e9)
        tracks[i] = Track(last: timestamp, ext: 0, offset: offset)
        return offset
    }

    /// The last presentation time handed on for track `i` (nil before its first).
    func lastPTS(track i: Int) -> Int64? { tracks[i]?.lastPTS }

    mutating func handedOn(track i: Int, pts: Int64) { tracks[i]?.lastPTS = pts }
}
