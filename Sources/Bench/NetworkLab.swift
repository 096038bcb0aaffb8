import Foundation

/// `--impair loss=2%,delay=20ms,jitter=10ms,reorder=5%`.
struct Impairment: CustomStringConvertible {
    var loss = 0.0, delayMs = 0.0, jitterMs = 0.0, reorder = 0.0

    init(parsing text: String) throws {
        for part in text.split(separator: ",") {
            let kv = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard kv.count == 2 else { throw BenchError("--impair: expected key=value, got \"\(part)\"") }
            func number(_ suffix: String) throws -> Double {
                let v = kv[1].hasSuffix(suffix) ? String(kv[1].dropLast(suffix.count)) : kv[1]
                guard let d = Double(v), d >= 0 else { throw BenchError("--impair: \(kv[0]): expected a number\(suffix.isEmpty ? "" : " in " + suffix), got \"\(kv[1])\"") }
                return d
            }
            switch kv[0] {
            case "loss": loss = try number("%") / 100
            case "delay": delayMs = try number("ms")
            case "jitter": jitterMs = try number("ms")
            case "reorder": reorder = try number("%") / 100
            default: throw BenchError("--impair: unknown key \"\(kv[0])\" (loss, delay, jitter, reorder)")
            }
        }
        guard loss < 1, reorder <= 1 else { throw BenchError("--impair: loss and reorder are percentages below 100") }
    }

    var description: String {
        String(format: "loss %.1f%%, delay %.0f ms, jitter ±%.0f ms, reorder %.1f%%", loss * 100, delayMs, jitterMs, reorder * 100)
    }
}

/// Two network namespaces' worth of a real link: the sources run in a namespace of their own,
/// joined to this one by a veth pair; what crosses the link into this namespace (where LiveRelay
/// and the readers are) is impaired with netem when the kernel has it, else with iptables'
/// statistic match (loss) and an NFQUEUE delayer (delay, jitter, reordering).
final class NetworkLab {
    let namespace: String
    let hostSide: String, sourceSide: String
    let hostAddress: String, sourceAddress: String
    let impairment: Impairment
    private(set) var method = ""
    private var rules: [[String]] = []
    private var delayer: ChildProcess?

    init(impairment: Impairment, scriptPath: (String) -> String) throws {
        guard getuid() == 0 else { throw BenchError("--impair needs root (network namespaces, iptables)") }
        self.impairment = impairment
        let id = getpid() % 10000
        namespace = "lrbench\(id)"
        hostSide = "lrh\(id)"
        sourceSide = "lrs\(id)"
        let net = Int(id % 250) + 1
        hostAddress = "10.213.\(net).1"
        sourceAddress = "10.213.\(net).2"
        try sh("ip", "netns", "add", namespace)
        try sh("ip", "link", "add", hostSide, "type", "veth", "peer", "name", sourceSide)
        try sh("ip", "link", "set", sourceSide, "netns", namespace)
        try sh("ip", "addr", "add", "\(hostAddress)/30", "dev", hostSide)
        try sh("ip", "link", "set", hostSide, "up")
        try sh("ip", "netns", "exec", namespace, "ip", "addr", "add", "\(sourceAddress)/30", "dev", sourceSide)
        try sh("ip", "netns", "exec", namespace, "ip", "link", "set", sourceSide, "up")
        try sh("ip", "netns", "exec", namespace, "ip", "link", "set", "lo", "up")
        let netem = ["tc", "qdisc", "add", "dev", sourceSide, "root", "netem"]
        var args: [String] = []
        if impairment.delayMs > 0 || impairment.jitterMs > 0 { args += ["delay", "\(impairment.delayMs)ms", "\(impairment.jitterMs)ms"] }
        if impairment.loss > 0 { args += ["loss", "\(impairment.loss * 100)%"] }
        if impairment.reorder > 0 { args += ["reorder", "\(impairment.reorder * 100)%"] }
        if (try? sh(["ip", "netns", "exec", namespace] + netem + (args.isEmpty ? ["delay", "0ms"] : args))) != nil {
            method = "tc netem on the source side of the veth"
            return
        }
        // No netem in this kernel: iptables and a userspace delayer, on packets entering here.
        var used: [String] = []
        if impairment.loss > 0 {
            let rule = ["INPUT", "-i", hostSide, "-m", "statistic", "--mode", "random", "--probability", String(impairment.loss), "-j", "DROP"]
            try sh(["iptables", "-A"] + rule)
            rules.append(["-D"] + rule)
            used.append("iptables statistic (loss)")
        }
        if impairment.delayMs > 0 || impairment.jitterMs > 0 || impairment.reorder > 0 {
            let queue = String(100 + Int(id % 900))
            let d = try ChildProcess(name: "nfq-delay", "/usr/bin/python3", ["-u", scriptPath("nfq_delay.py"), "--queue", queue, "--delay-ms", String(impairment.delayMs),
                                                                     "--jitter-ms", String(impairment.jitterMs), "--reorder", String(impairment.reorder)])
            guard d.waitFor("ready", timeout: 10) else {
                throw BenchError("the NFQUEUE delayer did not start (python3 NetfilterQueue; scripts/setup.sh installs it): \(d.stderr.suffix(300))")
            }
            delayer = d
            let rule = ["PREROUTING", "-t", "raw", "-i", hostSide, "-j", "NFQUEUE", "--queue-num", queue, "--queue-bypass"]
            try sh(["iptables", "-A"] + rule)
            rules.append(["-D"] + rule)
            used.append("NFQUEUE delayer (delay, jitter, reorder)")
        }
        method = used.joined(separator: " + ") + " — this kernel has no netem"
    }

    /// The command, run inside the sources' namespace.
    func inSourceNamespace(_ exe: String, _ args: [String]) -> (String, [String]) {
        ("/usr/sbin/ip", ["netns", "exec", namespace, exe] + args)
    }

    func tearDown() {
        for r in rules { _ = try? sh(["iptables"] + r) }
        rules = []
        delayer?.stop()
        _ = try? sh("ip", "netns", "delete", namespace)
        _ = try? sh("ip", "link", "delete", hostSide)
    }

    deinit { tearDown() }

    @discardableResult
    private func sh(_ args: String...) throws -> String { try sh(args) }

    @discardableResult
    private func sh(_ args: [String]) throws -> String {
        let exe = ["/usr/sbin/\(args[0])", "/usr/bin/\(args[0])", "/sbin/\(args[0])"].first { FileManager.default.fileExists(atPath: $0) } ?? args[0]
        let r = try ChildProcess.run(exe, Array(args.dropFirst()))
        guard r.status == 0 else { throw BenchError("\(args.joined(separator: " ")): \(r.stderr.trimmingCharacters(in: .whitespacesAndNewlines))") }
        return r.stdout
    }
}
