import MediaCore
import Mux
import Foundation

/// The words on a stream's "signal lost" slate.
enum SignalLostSlate {
    static let clock: DateFormatter = {
        let f = DateFormatter()
        f.dateFormat = "HH:mm:ss"
        f.timeZone = TimeZone(identifier: "UTC")
        f.locale = Locale(identifier: "en_US_POSIX")
        return f
    }()

    static func lines(status: StreamStatus, lastFrame: Date?, now: Date = Date()) -> [Slate.Line] {
        let since = lastFrame ?? status.signalLostSince ?? status.since ?? now
        let seconds = max(0, Int(now.timeIntervalSince(since)))
        var lines: [Slate.Line] = [
            Slate.Line("SIGNAL LOST", scale: 6),
            Slate.Line(status.title ?? status.name, scale: 3),
            Slate.Line("since \(clock.string(from: since)) UTC (\(seconds) s)", scale: 3),
        ]
        var state = status.state.rawValue
        if let a = status.reconnectAttempt { state += ", attempt \(a)" }
        lines.append(Slate.Line(state, scale: 2, bright: false))
        if let e = status.lastError {
            // Up to two lines of the reason (already free of credentials).
            let words = e.split(separator: " ")
            var current = "", out: [String] = []
            for w in words {
                if current.count + w.count + 1 > 48 { out.append(current); current = "" }
                current += (current.isEmpty ? "" : " ") + w
            }
            if !current.isEmpty { out.append(current) }
            for l in out.prefix(2) { lines.append(Slate.Line(l, scale: 2, bright: false)) }
        }
        return lines
    }

    static func jpeg(width: Int, height: Int, status: StreamStatus, lastFrame: Date?) throws -> [UInt8] {
        let frame = try Slate.render(width: width, height: height, lines: lines(status: status, lastFrame: lastFrame))
        return try JPEGEncoder(width: frame.width, height: frame.height, quality: 70).encode(frame)
    }
}
