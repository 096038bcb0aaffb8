/// WS-Discovery (2005/04, as ONVIF uses it): the Probe for network video transmitters sent
/// to 239.255.255.250:3702, and the ProbeMatches devices answer. A match counts only when it
/// relates to the probe sent (`RelatesTo`), so a stray or forged answer to someone else's probe
/// is dropped.
public enum WSDiscovery {
    public static let port: UInt16 = 3702
    public static let group = "239.255.255.250"

    public static func probe(messageID: String) -> [UInt8] {
        Array("""
        <?xml version="1.0" encoding="UTF-8"?><s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" \
        xmlns:a="http://schemas.xmlsoap.org/ws/2004/08/addressing" xmlns:d="http://schemas.xmlsoap.org/ws/2005/04/discovery" \
        xmlns:dn="http://www.onvif.org/ver10/network/wsdl"><s:Header><a:Action>http://schemas.xmlsoap.org/ws/2005/04/discovery/Probe</a:Action>\
        <a:MessageID>\(messageID.xmlEscaped)</a:MessageID><a:To>urn:schemas-xmlsoap-org:ws:2005:04:discovery</a:To></s:Header>\
        <s:Body><d:Probe><d:Types>dn:NetworkVideoTransmitter</d:Types></d:Probe></s:Body></s:Envelope>
        """.utf8)
    }

    public struct Match: Sendable, Equatable {
        /// The device's endpoint reference (usually `urn:uuid:…`).
        public var endpoint: String
        /// Its device service addresses (`http://…/onvif/device_service`), absolute http(s) only.
        public var addresses: [String]
        /// Scopes as sent, at most 32 (`onvif://www.onvif.org/name/…`, `…/hardware/…`).
        public var scopes: [String]

        /// The `name` scope, percent-decoded: the name the camera gives itself.
        public var name: String? { scope("name") }
        /// The `hardware` scope: usually the model.
        public var hardware: String? { scope("hardware") }

        func scope(_ key: String) -> String? {
            let prefix = "onvif://www.onvif.org/\(key)/"
            guard let s = scopes.first(where: { $0.hasPrefixIgnoringCase(prefix) }) else { return nil }
            let raw = s.dropFirst(prefix.count)
            return ONVIFAnswer.printable(RTSPURL.percentDecoded(raw) ?? String(raw), limit: 64)
        }
    }

    /// The matches of one datagram that answers `messageID`; empty for anything else.
    public static func matches(_ datagram: [UInt8], answering messageID: String) -> [Match] {
        guard case .success(let root) = XMLTree.parse(datagram, maxBytes: 64 << 10, maxElements: 2000), root.name == "Envelope",
              let relates = root.path("Header", "RelatesTo")?.value, relates == messageID,
              let body = root.child("Body") else { return [] }
        // Some devices leave out the ProbeMatches wrapper.
        let list = body.child("ProbeMatches") ?? body
        return list.children("ProbeMatch").prefix(16).compactMap { m in
            let addresses = words(m.child("XAddrs")?.value ?? "").filter { $0.hasPrefixIgnoringCase("http://") || $0.hasPrefixIgnoringCase("https://") }
            guard !addresses.isEmpty else { return nil }
            return Match(endpoint: ONVIFAnswer.printable(m.path("EndpointReference", "Address")?.value ?? "", limit: 128),
                         addresses: Array(addresses.prefix(8)), scopes: Array(words(m.child("Scopes")?.value ?? "").prefix(32)))
        }
    }

    /// Space-separated URIs, each printable ASCII of at most 512 bytes.
    static func words(_ s: String) -> [String] {
        s.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" })
            .filter { $0.utf8.count <= 512 && !$0.utf8.contains(where: { $0 < 0x21 || $0 > 0x7E }) }
            .map(String.init)
    }
}
