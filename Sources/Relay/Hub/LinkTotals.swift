import MediaCore

/// A stream's link counters over its life: each session's counters start at zero, so a value
/// lower than the last one seen begins a new session, and the last one is kept as a base.
struct LinkTotals {
    private var last: [String: Int] = [:]
    private var base: [String: Int] = [:]

    private mutating func total(_ key: String, _ value: Int) -> Int {
        if let l = last[key], value < l { base[key, default: 0] &+= l }
        last[key] = value
        return (base[key] ?? 0) &+ value
    }

    mutating func accumulate(_ link: LinkHealth) -> LinkHealth {
        var out = link
        for i in out.tracks.indices {
            let k = "\(out.tracks[i].index)."
            out.tracks[i].packetsReceived = total(k + "received", out.tracks[i].packetsReceived)
            out.tracks[i].packetsLost = total(k + "lost", out.tracks[i].packetsLost)
            out.tracks[i].packetsReordered = total(k + "reordered", out.tracks[i].packetsReordered)
        }
        if var srt = out.srt {
            srt.packetsReceived = total("srt.received", srt.packetsReceived)
            srt.packetsLost = total("srt.lost", srt.packetsLost)
            srt.packetsRetransmitted = total("srt.retransmitted", srt.packetsRetransmitted)
            srt.packetsDropped = total("srt.dropped", srt.packetsDropped)
            out.srt = srt
        }
        return out
    }
}
