/// What an ONVIF camera answers, taken from its SOAP envelope (parsed by `XMLTree`). Names are
/// matched by their local part and every value is checked: a camera's answer may be wrong in
/// any field, and the worst it gets is a one-line error.
public enum ONVIFAnswer {
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        case xml(XMLTreeError)
        case notEnvelope
        /// A SOAP fault: its reason (printable, cut short) and whether it says the sender is
        /// not authorized (ter:NotAuthorized, or a reason saying so).
        case fault(reason: String, notAuthorized: Bool)
        /// The answer lacks what was asked for.
        case missing(String)

        public var description: String {
            switch self {
            case .xml(let e): "\(e)"
            case .notEnvelope: "the answer is not a SOAP envelope"
            case .fault(let r, let unauthorized): unauthorized ? "not authorized (\(r))" : "SOAP fault: \(r)"
            case .missing(let what): "the answer has no \(what)"
            }
        }
    }

    /// The first element inside the envelope's Body, or the fault it holds.
    public static func body(_ bytes: [UInt8]) -> Result<XMLElement, Failure> {
        let root: XMLElement
        switch XMLTree.parse(bytes) {
        case .success(let r): root = r
        case .failure(let e): return .failure(.xml(e))
        }
        guard root.name == "Envelope", let body = root.child("Body") else { return .failure(.notEnvelope) }
        guard let first = body.children.first else { return .failure(.missing("body element")) }
        if first.name == "Fault" { return .failure(fault(first)) }
        return .success(first)
    }

    static func fault(_ f: XMLElement) -> Failure {
        let reason = f.path("Reason", "Text")?.value ?? f.child("faultstring")?.value ?? "no reason"
        var codes: [String] = []
        var code = f.child("Code")
        while let c = code {
            if let v = c.child("Value")?.value { codes.append(v) }
            code = c.child("Subcode")
        }
        let unauthorized = codes.contains { $0.utf8ContainsIgnoringCase("NotAuthorized") || $0.utf8ContainsIgnoringCase("FailedAuthentication") }
            || reason.utf8ContainsIgnoringCase("not authorized") || reason.utf8ContainsIgnoringCase("authentication")
        return .fault(reason: printable(reason), notAuthorized: unauthorized)
    }

    /// Printable ASCII, at most 160 characters: a camera's text fit for one log line.
    public static func printable(_ s: some StringProtocol, limit: Int = 160) -> String {
        String(String.UnicodeScalarView(s.unicodeScalars.prefix(limit).map { $0.value >= 0x20 && $0.value < 0x7F ? $0 : "?" }))
    }

    // MARK: device

    public struct DeviceInformation: Sendable, Equatable {
        public var manufacturer = "", model = "", firmware = "", serial = ""
    }

    public static func deviceInformation(_ e: XMLElement) -> DeviceInformation {
        DeviceInformation(manufacturer: printable(e.child("Manufacturer")?.value ?? ""), model: printable(e.child("Model")?.value ?? ""),
                          firmware: printable(e.child("FirmwareVersion")?.value ?? ""), serial: printable(e.child("SerialNumber")?.value ?? ""))
    }

    /// The camera's clock (GetSystemDateAndTime's UTCDateTime), seconds since 1970.
    public static func systemTime(_ e: XMLElement) -> Int64? {
        guard let utc = e.descendant("UTCDateTime"), let date = utc.child("Date"), let time = utc.child("Time") else { return nil }
        func n(_ x: XMLElement, _ name: String) -> Int64? { x.child(name).flatMap { PeerNumber.integer($0.value, in: 0...9999) } }
        guard let y = n(date, "Year"), let mo = n(date, "Month"), let d = n(date, "Day"),
              let h = n(time, "Hour"), let mi = n(time, "Minute"), let s = n(time, "Second") else { return nil }
        return ONVIFTime.unixSeconds(year: y, month: mo, day: d, hour: h, minute: mi, second: s)
    }

    /// The media and PTZ service addresses of GetCapabilities.
    public static func capabilities(_ e: XMLElement) -> (media: String?, ptz: String?) {
        let c = e.child("Capabilities") ?? e
        return (c.path("Media", "XAddr")?.value, c.path("PTZ", "XAddr")?.value)
    }

    // MARK: media

    public struct Profile: Sendable, Equatable {
        public var token: String
        public var name: String
        public var encoding: String?
        public var width: Int?
        public var height: Int?
        public var fps: Int?
        /// Has a PTZ configuration: PTZ requests name this profile.
        public var ptz: Bool

        public init(token: String, name: String, encoding: String? = nil, width: Int? = nil, height: Int? = nil, fps: Int? = nil, ptz: Bool = false) {
            self.token = token
            self.name = name
            self.encoding = encoding
            self.width = width
            self.height = height
            self.fps = fps
            self.ptz = ptz
        }

        /// Pixels per picture, 0 when the camera did not say.
        public var area: Int { (width ?? 0).multipliedReportingOverflow(by: height ?? 0).overflow ? 0 : (width ?? 0) * (height ?? 0) }
    }

    /// The profiles of GetProfiles, at most 64; those without a usable token are left out.
    public static func profiles(_ e: XMLElement) -> [Profile] {
        e.children("Profiles").prefix(64).compactMap { p in
            guard let token = token(p.attributes["token"]) else { return nil }
            let encoder = p.child("VideoEncoderConfiguration")
            func dimension(_ name: String) -> Int? { encoder?.path("Resolution", name).flatMap { PeerNumber.integer($0.value, in: 1...32_768) } }
            return Profile(token: token, name: printable(p.child("Name")?.value ?? token, limit: 64),
                           encoding: encoder?.child("Encoding").map { printable($0.value, limit: 16) },
                           width: dimension("Width"), height: dimension("Height"),
                           fps: encoder?.path("RateControl", "FrameRateLimit").flatMap { PeerNumber.integer($0.value, in: 1...1000) },
                           ptz: p.child("PTZConfiguration") != nil)
        }
    }

    /// The URI of GetStreamUri's or GetSnapshotUri's MediaUri, as the camera wrote it.
    public static func mediaURI(_ e: XMLElement) -> String? {
        guard let uri = e.path("MediaUri", "Uri")?.value, !uri.isEmpty, uri.utf8.count <= 2048,
              !uri.utf8.contains(where: { $0 < 0x21 || $0 == 0x7F }) else { return nil }
        return uri
    }

    /// GetStreamUri's URI when it is an `rtsp://` or `rtsps://` URL, its credentials left out
    /// (some cameras write theirs in): nothing else is opened (a `file:`, `pipe:` or `http:` URI
    /// from a camera would have libavformat read a local file or another host).
    public static func streamURI(_ e: XMLElement) -> RTSPURL? {
        mediaURI(e).flatMap { RTSPURL($0) }.flatMap { RTSPURL($0.withoutCredentials) }
    }

    /// GetSnapshotUri's URI when it is an `http://` or `https://` URL without credentials.
    public static func snapshotURI(_ e: XMLElement) -> String? {
        guard let u = mediaURI(e), u.hasPrefixIgnoringCase("http://") || u.hasPrefixIgnoringCase("https://") else { return nil }
        let authority = u.utf8.dropFirst(u.hasPrefixIgnoringCase("https://") ? 8 : 7).prefix { $0 != 0x2F }
        return authority.contains(0x40) ? nil : u
    }

    /// A token as ONVIF's ReferenceToken: 1 to 64 bytes of printable ASCII without spaces.
    static func token(_ s: String?) -> String? {
        guard let s, !s.isEmpty, s.utf8.count <= 64, s.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else { return nil }
        return s
    }

    // MARK: PTZ

    public struct Position: Sendable, Equatable {
        public var pan: Double?
        public var tilt: Double?
        public var zoom: Double?

        public init(pan: Double? = nil, tilt: Double? = nil, zoom: Double? = nil) {
            self.pan = pan
            self.tilt = tilt
            self.zoom = zoom
        }
    }

    public struct Preset: Sendable, Equatable {
        public var token: String
        public var name: String
        public var position: Position?

        public init(token: String, name: String, position: Position? = nil) {
            self.token = token
            self.name = name
            self.position = position
        }
    }

    static func position(_ e: XMLElement?) -> Position? {
        guard let e else { return nil }
        func axis(_ x: XMLElement?, _ a: String) -> Double? { x?.attributes[a].flatMap { PeerNumber.decimal($0, in: -1e6...1e6) } }
        let p = Position(pan: axis(e.child("PanTilt"), "x"), tilt: axis(e.child("PanTilt"), "y"), zoom: axis(e.child("Zoom"), "x"))
        return p.pan == nil && p.tilt == nil && p.zoom == nil ? nil : p
    }

    /// GetPresets' presets, at most 256; those without a usable token are left out.
    public static func presets(_ e: XMLElement) -> [Preset] {
        e.children("Preset").prefix(256).compactMap { p in
            guard let token = token(p.attributes["token"]) else { return nil }
            return Preset(token: token, name: printable(p.child("Name")?.value ?? token, limit: 64), position: position(p.child("PTZPosition")))
        }
    }

    /// GetStatus' position.
    public static func status(_ e: XMLElement) -> Position? {
        position(e.child("PTZStatus")?.child("Position"))
    }

    /// SetPreset's new token.
    public static func presetToken(_ e: XMLElement) -> String? {
        token(e.child("PresetToken")?.value)
    }
}
