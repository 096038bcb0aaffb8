import Foundation
import Wire
import MediaCore
import Yams

/// `hooks`: stream events told to other systems, by HTTP and by running commands.
///
/// ```yaml
/// hooks:
///   webhooks:
///     - {url: "https://ops.example/liverelay", secret: "…", events: [live, signal_lost, segment_complete]}
///   commands:
///     - {run: "/usr/local/bin/upload-recording", events: [segment_complete], timeout: 5m}
///   max_commands: 4
/// ```
public struct HookSettings: Sendable {
    public struct Webhook: Sendable {
        public var url: String
        /// Signs each body: `X-LiveRelay-Signature: sha256=HEX(HMAC-SHA256(secret, body))`.
        public var secret: String?
        /// nil: every event.
        public var events: Set<StreamEvent.Kind>?
        /// Seconds for one delivery (the whole exchange).
        public var timeout = 5.0
        /// Events waiting for this hook at most; past it the oldest are dropped, counted.
        public var queue = 1024
        /// Attempts per event before it is given up, counted.
        public var attempts = 8
    }
    public struct Command: Sendable {
        /// Run by `/bin/sh -c`, with the event in `LIVERELAY_*` environment variables (never in
        /// the command line: a stream name or a camera's error text is not shell syntax).
        public var run: String
        public var events: Set<StreamEvent.Kind>?
        /// Seconds a run may take; then SIGTERM, and SIGKILL 2 s later.
        public var timeout = 30.0
    }
    public var webhooks: [Webhook] = []
    public var commands: [Command] = []
    /// Commands running at once, all hooks together; events past it wait (up to 256), then drop.
    public var maxCommands = 4

    public init() {}

    public var isEmpty: Bool { webhooks.isEmpty && commands.isEmpty }
}

extension HookSettings {
    init(config node: Node, _ r: Configuration.Reader) throws(ConfigError) {
        self.init()
        let m = try r.mapping(node, "hooks", allowed: ["webhooks", "commands", "max_commands"])
        if let w = m["webhooks"] {
            guard case .sequence(let list) = w else { throw ConfigError(file: r.file, path: "hooks.webhooks", problem: "expected a list of {url, secret, events}") }
            for (i, item) in list.enumerated() {
                let path = "hooks.webhooks[\(i)]"
                let h = try r.mapping(item, path, allowed: ["url", "secret", "events", "timeout", "queue", "attempts"])
                guard let u = h["url"] else { throw ConfigError(file: r.file, path: "\(path).url", problem: "missing") }
                let url = try r.string(u, "\(path).url")
                guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), ["http", "https"].contains(scheme),
                      let host = parsed.host, !host.isEmpty else {
                    throw ConfigError(file: r.file, path: "\(path).url", problem: "expected an http:// or https:// URL, got \"\(Redactor.masking(url).text.prefix(200))\"")
                }
                var hook = Webhook(url: url)
                if let s = h["secret"] {
                    let secret = try r.string(s, "\(path).secret")
                    guard secret.utf8.count >= 16 else { throw ConfigError(file: r.file, path: "\(path).secret", problem: "at least 16 characters") }
                    hook.secret = secret
                }
                // Events leave the machine: a receiver beyond loopback must be able to tell them
                // from forgeries.
                if hook.secret == nil && !Configuration.isLoopback(host: host) {
                    throw ConfigError(file: r.file, path: "\(path).secret", problem: "missing: a webhook beyond loopback is signed (at least 16 characters)")
                }
                if let e = h["events"] { hook.events = try Self.events(e, "\(path).events", r) }
                if let t = h["timeout"] { hook.timeout = try r.duration(t, "\(path).timeout", 0.1...120) }
                if let q = h["queue"] { hook.queue = Int(try r.number(q, "\(path).queue", 1...65_536)) }
                if let a = h["attempts"] { hook.attempts = Int(try r.number(a, "\(path).attempts", 1...100)) }
                webhooks.append(hook)
            }
        }
        if let c = m["commands"] {
            guard case .sequence(let list) = c else { throw ConfigError(file: r.file, path: "hooks.commands", problem: "expected a list of {run, events}") }
            for (i, item) in list.enumerated() {
                let path = "hooks.commands[\(i)]"
                let h = try r.mapping(item, path, allowed: ["run", "events", "timeout"])
                guard let run = h["run"] else { throw ConfigError(file: r.file, path: "\(path).run", problem: "missing") }
                var command = Command(run: try r.string(run, "\(path).run"))
                guard !command.run.trimmingASCIISpaces().isEmpty else { throw ConfigError(file: r.file, path: "\(path).run", problem: "empty") }
                if let e = h["events"] { command.events = try Self.events(e, "\(path).events", r) }
                if let t = h["timeout"] { command.timeout = try r.duration(t, "\(path).timeout", 0.1...86_400) }
                commands.append(command)
            }
        }
        if let n = m["max_commands"] { maxCommands = Int(try r.number(n, "hooks.max_commands", 1...256)) }
    }

    static func events(_ node: Node, _ path: String, _ r: Configuration.Reader) throws(ConfigError) -> Set<StreamEvent.Kind> {
        var out: Set<StreamEvent.Kind> = []
        for (i, name) in try r.strings(node, path).enumerated() {
            guard let kind = StreamEvent.Kind(rawValue: name) else {
                throw ConfigError(file: r.file, path: "\(path)[\(i)]",
                                  problem: "unknown event \"\(name.prefix(60))\" (expected one of \(StreamEvent.Kind.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            out.insert(kind)
        }
        return out
    }
}
