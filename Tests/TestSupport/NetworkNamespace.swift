public import Foundation

/// A real link for fault tests: a network namespace of its own joined to this one by a veth
/// pair (addresses 10.X.N.1 here and 10.X.N.2 there, N from the process id), plus iptables
/// rules on packets entering here. Removed again by `tearDown` (rules, namespace, link).
public final class NetworkNamespace {
    public let name: String
    /// The veth end in this namespace (iptables rules match `-i hostSide`).
    public let hostSide: String
    public let hostAddress: String
    public let address: String
    private var rules: [[String]] = []
    private var delayer: ChildProcess?

    /// - Parameter tag: a short word for the names (`lrTAG…`), `net` the second octet (one per test).
    public init(tag: String, net: Int) throws {
        try FastRun.refuse("ip netns and iptables (a network namespace)")
        let id = Int(getpid() % 10000)
        name = "lr\(tag)\(id)"
        // Two letters of the tag: tests side by side must not share a link name.
        hostSide = "lr\(tag.prefix(2))h\(id)"
        let side = "lr\(tag.prefix(2))s\(id)"
        let n = id % 250 + 1
        hostAddress = "10.\(net).\(n).1"
        address = "10.\(net).\(n).2"
        for cmd in [["ip", "netns", "add", name], ["ip", "link", "add", hostSide, "type", "veth", "peer", "name", side],
                    ["ip", "link", "set", side, "netns", name], ["ip", "addr", "add", "\(hostAddress)/30", "dev", hostSide], ["ip", "link", "set", hostSide, "up"],
                    ["ip", "netns", "exec", name, "ip", "addr", "add", "\(address)/30", "dev", side],
                    ["ip", "netns", "exec", name, "ip", "link", "set", side, "up"], ["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"]] {
            let r = try Self.sh(cmd)
            guard r.status == 0 else {
                tearDown()
                throw Servers.ServerError("\(cmd.joined(separator: " ")): \(r.stderr)")
            }
        }
    }

    /// Appends an iptables rule on packets entering here from the namespace (the `INPUT` chain,
    /// `-i hostSide` added): e.g. `["-p", "udp", "-j", "DROP"]`.
    public func addInputRule(_ match: [String]) throws {
        let rule = ["INPUT", "-i", hostSide] + match
        let r = try Self.sh(["iptables", "-A"] + rule)
        guard r.status == 0 else { throw Servers.ServerError("iptables: \(r.stderr)") }
        rules.append(rule)
    }

    /// Delays every packet entering here from the namespace by `delayMs` ± `jitterMs` (uniform,
    /// so packets overtake each other when the jitter exceeds their spacing): an NFQUEUE rule and
    /// scripts/nfq_delay.py (this kernel has no netem).
    public func addDelay(delayMs: Double, jitterMs: Double) throws {
        let queue = String(1000 + Int(getpid() % 900))
        let d = try ChildProcess(name: "nfq-delay", "/usr/bin/python3", ["-u", Paths.packageRoot.appendingPathComponent("scripts/nfq_delay.py").path,
                                                                 "--queue", queue, "--delay-ms", String(delayMs), "--jitter-ms", String(jitterMs)])
        guard d.waitFor("ready", timeout: 10) else {
            d.stop()
            throw Servers.ServerError("the NFQUEUE delayer did not start (python3 NetfilterQueue; scripts/setup.sh installs it): \(d.stderr.suffix(300))")
        }
        delayer = d
        let rule = ["-t", "raw", "PREROUTING", "-i", hostSide, "-j", "NFQUEUE", "--queue-num", queue, "--queue-bypass"]
        let r = try Self.sh(["iptables", "-t", "raw", "-A"] + rule.dropFirst(2))
        guard r.status == 0 else { throw Servers.ServerError("iptables: \(r.stderr)") }
        rules.append(rule)
    }

    /// Impairs what enters the namespace (what a client there receives): random loss of UDP
    /// (`loss`, 0–1) and a delay of `delayMs` ± `jitterMs` on every packet (an NFQUEUE inside the
    /// namespace and scripts/nfq_delay.py run there). Rules inside go with the namespace.
    public func impairInbound(loss: Double, delayMs: Double, jitterMs: Double) throws {
        if loss > 0 {
            let (cmd, args) = command("/usr/sbin/iptables", ["-A", "INPUT", "-p", "udp", "-m", "statistic", "--mode", "random",
                                                             "--probability", String(loss), "-j", "DROP"])
            let r = try ChildProcess.run(cmd, args, timeout: 20)
            guard r.status == 0 else { throw Servers.ServerError("iptables in \(name): \(r.stderr)") }
        }
        if delayMs > 0 || jitterMs > 0 {
            let queue = String(1000 + Int(getpid() % 900))
            let (cmd, args) = command("/usr/bin/python3", ["-u", Paths.packageRoot.appendingPathComponent("scripts/nfq_delay.py").path,
                                                           "--queue", queue, "--delay-ms", String(delayMs), "--jitter-ms", String(jitterMs)])
            let d = try ChildProcess(name: "nfq-delay", cmd, args)
            guard d.waitFor("ready", timeout: 10) else {
                d.stop()
                throw Servers.ServerError("the NFQUEUE delayer did not start (python3 NetfilterQueue; scripts/setup.sh installs it): \(d.stderr.suffix(300))")
            }
            delayer = d
            let (c2, a2) = command("/usr/sbin/iptables", ["-t", "raw", "-A", "PREROUTING", "-j", "NFQUEUE", "--queue-num", queue, "--queue-bypass"])
            let r = try ChildProcess.run(c2, a2, timeout: 20)
            guard r.status == 0 else { throw Servers.ServerError("iptables in \(name): \(r.stderr)") }
        }
    }

    /// A command run inside the namespace.
    public func command(_ executable: String, _ arguments: [String]) -> (String, [String]) {
        ("/usr/sbin/ip", ["netns", "exec", name, executable] + arguments)
    }

    public func tearDown() {
        // `-t TABLE` stays in front of the chain (iptables -t raw -D PREROUTING …).
        for rule in rules {
            let table = rule.first == "-t" ? Array(rule.prefix(2)) : []
            _ = try? Self.sh(["iptables"] + table + ["-D"] + rule.dropFirst(table.count))
        }
        rules = []
        delayer?.stop()
        delayer = nil
        _ = try? Self.sh(["ip", "netns", "delete", name])
        _ = try? Self.sh(["ip", "link", "delete", hostSide])
    }

    static func sh(_ args: [String]) throws -> CommandResult {
        try ChildProcess.run("/usr/sbin/\(args[0])", Array(args.dropFirst()), timeout: 20)
    }
}
