import Foundation
public import Logging
import MediaCore
import Synchronization

/// Stream events told to the `hooks` section's webhooks and commands: subscribed to the
/// engine's event bus while the engine runs, each hook with its own queue.
public final class Hooks: Sendable {
    /// One hook's deliveries, for `/metrics` and the API.
    public struct Status: Sendable, Codable {
        public enum Kind: String, Sendable, Codable { case webhook, command }
        public var name: String
        public var kind: Kind
        /// The URL without credentials, or the command's first word.
        public var target: String
        /// By result: webhooks `delivered`, `failed_attempt`, `given_up`, `dropped`; commands
        /// `succeeded`, `failed`, `timed_out`, `dropped`.
        public var results: [String: Int]
        public var queued: Int
        public var lastError: String?
    }

    private let webhooks: [WebhookSender]
    private let commands: CommandHooks?
    private let events: StreamEventBus
    private let tasks = Mutex<(dispatcher: Task<Void, Never>?, senders: [Task<Void, Never>])>((nil, []))
    private let sequence = Atomic<UInt64>(0)
    /// Tells this process's events apart from another run's in an event id.
    private let boot = String(UInt32.random(in: .min ... .max), radix: 16)

    public init(settings: HookSettings, events: StreamEventBus, logger: Logger) {
        self.events = events
        webhooks = settings.webhooks.enumerated().map { WebhookSender(name: "webhook\($0.offset)", settings: $0.element, logger: logger) }
        commands = settings.commands.isEmpty ? nil : CommandHooks(commands: settings.commands, maxRunning: settings.maxCommands, logger: logger)
    }

    /// Subscribes now: events from here on are delivered.
    public func start() {
        let subscription = events.subscribe()
        let senders: [Task<Void, Never>] = webhooks.map { w in Task { await w.run() } }
        let dispatcher = Task { [self] in
            for await e in subscription { dispatch(e) }
        }
        tasks.withLock { $0 = (dispatcher, senders) }
    }

    func dispatch(_ event: StreamEvent) {
        let id = "\(boot)-\(sequence.add(1, ordering: .relaxed).newValue)"
        for w in webhooks { w.enqueue(event, id: id) }
        commands?.enqueue(event, id: id)
    }

    /// After the event bus finished (the engine stopped): takes the events still buffered, waits
    /// up to `grace` seconds for the webhooks to deliver them (a shutdown's `stopped` events among
    /// them), then stops.
    public func stop(grace: Double = 2) async {
        let (dispatcher, senders) = tasks.withLock { t in let a = t; t = (nil, []); return a }
        let deadline = ContinuousClock.now + .seconds(grace)
        if let dispatcher {
            let bounded = Task { try? await Task.sleep(until: deadline); dispatcher.cancel() }
            await dispatcher.value
            bounded.cancel()
        }
        while webhooks.contains(where: { $0.counters.queued > 0 }) && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(50))
        }
        commands?.stop()
        for w in webhooks { w.stop() }
        for t in senders { t.cancel() }
    }

    public var statuses: [Status] {
        var out = webhooks.map { w in
            let c = w.counters
            return Status(name: w.name, kind: .webhook, target: Redactor.redact(w.settings.url),
                          results: ["delivered": c.delivered, "failed_attempt": c.failedAttempts, "given_up": c.givenUp, "dropped": c.dropped],
                          queued: c.queued, lastError: c.lastError)
        }
        if let commands {
            for (i, command) in commands.commands.enumerated() {
                let c = commands.counters(i)
                out.append(Status(name: "command\(i)", kind: .command, target: String(command.run.split(separator: " ").first ?? ""),
                                  results: ["succeeded": c.succeeded, "failed": c.failed, "timed_out": c.timedOut, "dropped": c.dropped],
                                  queued: 0, lastError: c.lastError))
            }
        }
        return out
    }
}
