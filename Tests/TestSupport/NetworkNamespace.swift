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

    /// - Parameter tag: a short word for the names (`lrTAG…`), `net` the second octet (one per test).
    public init(tag: String, net: Int) throws {
        let id = Int(getpid() % 10000)
        name = "lr\(tag)\(id)"
        hostSide = "lr\(tag.prefix(1))h\(id)"
        let side = "lr\(tag.prefix(1))s\(id)"
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

    /// A command run inside the namespace.
    public func command(_ executable: String, _ arguments: [String]) -> (String, [String]) {
        ("/usr/sbin/ip", ["netns", "exec", name, executable] + arguments)
    }

    public func tearDown() {
        for rule in rules { _ = try? Self.sh(["iptables", "-D"] + rule) }
        rules = []
        _ = try? Self.sh(["ip", "netns", "delete", name])
        _ = try? Self.sh(["ip", "link", "delete", hostSide])
    }

    static func sh(_ args: [String]) throws -> CommandResult {
        try ChildProcess.run("/usr/sbin/\(args[0])", Array(args.dropFirst()), timeout: 20)
    }
}
