public import Wire

/// `server.trusted_proxies`: the addresses of proxies in front of the server (the nginx edge)
/// whose `X-Forwarded-For` is believed. A request from one of them is judged as coming from the
/// nearest address in that header that is not itself a trusted proxy; from anyone else the
/// header is ignored (a client can write anything in it).
public struct TrustedProxies: Sendable, Hashable {
    public var networks: [IPNetwork]

    public init(_ networks: [IPNetwork] = []) { self.networks = networks }

    public func trusts(_ address: IPAddress) -> Bool { networks.contains { $0.contains(address) } }

    /// The client a request is judged as: `peer`, or, when `peer` is a trusted proxy, the
    /// nearest untrusted hop of `forwardedFor` (a piece that is not an address stops the walk).
    public func client(peer: String, forwardedFor: String?) -> String {
        guard let header = forwardedFor, !networks.isEmpty, let p = IPAddress(peer), trusts(p) else { return peer }
        var nearest = peer
        for hop in ForwardedFor.hops(header).reversed() {
            guard let hop else { return nearest }
            nearest = hop.unmapped.description
            if !trusts(hop) { return nearest }
        }
        return nearest
    }
}
