import Foundation
import Wire

extension StreamEvent {
    /// Everything the event says beyond its kind, stream and time, by name: `attempt`,
    /// `connection`, `reason` (the detail) and the kind's own details.
    public var fields: [String: String] {
        var out = details ?? [:]
        if let attempt { out["attempt"] = "\(attempt)" }
        if let connection { out["connection"] = "\(connection)" }
        if let detail { out["reason"] = detail }
        return out
    }

    /// The time as hooks give it: RFC 3339 in UTC with milliseconds.
    var hookTime: String { at.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)) }

    /// A webhook's body: `WebhookBody` as sent, every value a string. `id` is the same on every
    /// attempt of one event (a receiver can drop repeats).
    func hookBody(id: String) -> [UInt8] {
        WebhookBody(self, id: id).json
    }

    /// A command hook's environment: `LIVERELAY_EVENT`, `LIVERELAY_STREAM`, `LIVERELAY_TIME`,
    /// `LIVERELAY_ID`, and each field as `LIVERELAY_` + its name in capitals (`LIVERELAY_FILE`).
    func hookEnvironment(id: String) -> [String: String] {
        var env = ["LIVERELAY_EVENT": kind.rawValue, "LIVERELAY_STREAM": stream, "LIVERELAY_TIME": hookTime, "LIVERELAY_ID": id]
        for (k, v) in fields {
            let name = String(decoding: k.utf8.map { b -> UInt8 in
                switch b {
                case 0x61...0x7A: b - 0x20
                case 0x41...0x5A, 0x30...0x39: b
                default: 0x5F
                }
            }, as: UTF8.self)
            // A NUL cannot be in an environment variable: cut there.
            env["LIVERELAY_" + name] = String(decoding: v.utf8.prefix { $0 != 0 }, as: UTF8.self)
        }
        return env
    }
}
