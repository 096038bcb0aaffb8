import Foundation

/// How `bench latency --quick` runs its scenarios side by side without measuring its own
/// overload: in groups that fit the machine's headroom, each group's idle CPU watched, and a row
/// measured on a machine with no idle left flagged as starved.
///
/// Run all at once on 2 cores (a 16-tile wall and hls.js in Chromium beside a dozen ffmpeg
/// readers), the load average reached 14 and ffmpeg's RTMP floor read 1,569 ms against 35 ms
/// alone: the table measured the bench.
struct LatencyGroups {
    /// The cores a scenario keeps busy while measured (its reader and what it makes the relay
    /// do beyond what already runs): estimates from `top` on runs of each alone, rounded up.
    static func load(_ s: LatencyRun.Scenario) -> Double {
        if s.tile != nil { return 1.6 }                      // the 16-tile wall in Chromium
        if s.page != nil { return s.name.contains("rendition") ? 1.2 : 0.9 } // hls.js or a native player
        if s.playlist != nil { return 0.05 }                 // a playlist polled
        if s.name.contains("rendition") { return 0.6 }       // a decode, scale and encode
        if s.input.contains("mpjpeg") { return 0.25 }        // the preview's JPEG encode and ffmpeg's decode
        return 0.15                                          // an ffmpeg reader of H.264
    }

    /// The machine's CPU counters (`/proc/stat`'s first line): busy and total jiffies.
    struct CPUSample {
        let busy: UInt64, total: UInt64

        static func now() -> CPUSample? {
            guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
                  let line = text.split(separator: "\n").first, line.hasPrefix("cpu ") else { return nil }
            let fields = line.split(separator: " ").dropFirst().compactMap { UInt64($0) }
            guard fields.count >= 5 else { return nil }
            let total = fields.reduce(0, &+)
            let idle = fields[3] &+ fields[4] // idle + iowait
            return CPUSample(busy: total &- idle, total: total)
        }

        /// The share of the machine left idle between two samples (0…1).
        func idle(since earlier: CPUSample) -> Double? {
            guard total > earlier.total else { return nil }
            return 1 - Double(busy &- earlier.busy) / Double(total &- earlier.total)
        }
    }

    /// Idle cores now, measured over `seconds` with everything the run started already running.
    static func headroom(over seconds: Double = 2) -> Double {
        let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
        guard let a = CPUSample.now() else { return cores }
        Thread.sleep(forTimeInterval: seconds)
        guard let b = CPUSample.now(), let idle = b.idle(since: a) else { return cores }
        return cores * idle
    }

    /// The floors first, together and with nothing else (a floor is the path without LiveRelay:
    /// it must not carry others' load); then the rest packed largest first into groups whose
    /// estimated load stays within `budget` cores. A scenario larger than the budget runs alone.
    static func plan(_ scenarios: [LatencyRun.Scenario], budget: Double) -> [[LatencyRun.Scenario]] {
        let floors = scenarios.filter { $0.relay == nil }
        var groups: [[LatencyRun.Scenario]] = floors.isEmpty ? [] : [floors]
        var loads: [Double] = []
        var rest: [[LatencyRun.Scenario]] = []
        for s in scenarios.filter({ $0.relay != nil }).sorted(by: { load($0) > load($1) }) {
            if let i = loads.firstIndex(where: { $0 + load(s) <= budget }) {
                rest[i].append(s)
                loads[i] += load(s)
            } else {
                rest.append([s])
                loads.append(load(s))
            }
        }
        groups += rest
        return groups
    }

    /// Below this share of the machine idle during a group, its rows are flagged as starved.
    static let starvedBelow = 0.10
}
