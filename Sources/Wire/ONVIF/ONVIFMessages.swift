import Crypto

/// ONVIF's SOAP requests, the few a relay needs (device, media, PTZ), written once: the
/// envelope, WS-Security's UsernameToken with a password digest, and each body. Text that
/// comes from a user or a camera (profile and preset tokens, preset names) is escaped.
public enum ONVIFRequest {
    public static let device = "http://www.onvif.org/ver10/device/wsdl"
    public static let media = "http://www.onvif.org/ver10/media/wsdl"
    public static let ptz = "http://www.onvif.org/ver20/ptz/wsdl"
    public static let schema = "http://www.onvif.org/ver10/schema"

    /// A SOAP 1.2 envelope around `body`, with a UsernameToken header when `credentials` are
    /// given. `nonce` and `created` (UTC, `2026-11-27T22:40:09Z`) are the token's; tests give
    /// fixed ones.
    public static func envelope(body: String, credentials: (user: String, password: String)?, nonce: [UInt8], created: String) -> [UInt8] {
        var header = ""
        if let credentials {
            let digest = passwordDigest(nonce: nonce, created: created, password: credentials.password)
            header = """
            <s:Header><wsse:Security s:mustUnderstand="1" xmlns:wsse="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd" \
            xmlns:wsu="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd"><wsse:UsernameToken>\
            <wsse:Username>\(credentials.user.xmlEscaped)</wsse:Username>\
            <wsse:Password Type="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordDigest">\(digest)</wsse:Password>\
            <wsse:Nonce EncodingType="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-soap-message-security-1.0#Base64Binary">\(Base64.encode(nonce))</wsse:Nonce>\
            <wsu:Created>\(created.xmlEscaped)</wsu:Created></wsse:UsernameToken></wsse:Security></s:Header>
            """
        }
        let text = """
        <?xml version="1.0" encoding="UTF-8"?><s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope">\(header)<s:Body>\(body)</s:Body></s:Envelope>
        """
        return Array(text.utf8)
    }

    /// WS-Security UsernameToken Profile 1.0 §3.1: Base64(SHA-1(nonce + created + password)).
    public static func passwordDigest(nonce: [UInt8], created: String, password: String) -> String {
        var h = Insecure.SHA1()
        h.update(data: nonce)
        h.update(data: Array(created.utf8))
        h.update(data: Array(password.utf8))
        return Base64.encode(Array(h.finalize()))
    }

    public static let getSystemDateAndTime = #"<GetSystemDateAndTime xmlns="http://www.onvif.org/ver10/device/wsdl"/>"#
    public static let getDeviceInformation = #"<GetDeviceInformation xmlns="http://www.onvif.org/ver10/device/wsdl"/>"#
    public static let getCapabilities = #"<GetCapabilities xmlns="http://www.onvif.org/ver10/device/wsdl"><Category>All</Category></GetCapabilities>"#
    public static let getProfiles = #"<GetProfiles xmlns="http://www.onvif.org/ver10/media/wsdl"/>"#

    public static func getStreamURI(profile: String) -> String {
        """
        <GetStreamUri xmlns="http://www.onvif.org/ver10/media/wsdl"><StreamSetup><Stream xmlns="\(schema)">RTP-Unicast</Stream>\
        <Transport xmlns="\(schema)"><Protocol>RTSP</Protocol></Transport></StreamSetup><ProfileToken>\(profile.xmlEscaped)</ProfileToken></GetStreamUri>
        """
    }

    public static func getSnapshotURI(profile: String) -> String {
        #"<GetSnapshotUri xmlns="http://www.onvif.org/ver10/media/wsdl"><ProfileToken>\#(profile.xmlEscaped)</ProfileToken></GetSnapshotUri>"#
    }

    /// Velocities in the generic space, each in −1…1 (clamped here); zero axes are left out.
    public static func continuousMove(profile: String, pan: Double, tilt: Double, zoom: Double, timeoutSeconds: Double?) -> String {
        func v(_ x: Double) -> String { x.isFinite ? decimal(min(max(x, -1), 1)) : "0" }
        var velocity = ""
        if pan != 0 || tilt != 0 { velocity += #"<PanTilt xmlns="\#(schema)" x="\#(v(pan))" y="\#(v(tilt))"/>"# }
        if zoom != 0 { velocity += #"<Zoom xmlns="\#(schema)" x="\#(v(zoom))"/>"# }
        var timeout = ""
        if let t = timeoutSeconds, t.isFinite, t > 0 { timeout = "<Timeout>PT\(decimal(min(max(t, 0.1), 3600)))S</Timeout>" }
        return #"<ContinuousMove xmlns="\#(ptz)"><ProfileToken>\#(profile.xmlEscaped)</ProfileToken><Velocity>\#(velocity)</Velocity>\#(timeout)</ContinuousMove>"#
    }

    public static func stop(profile: String) -> String {
        #"<Stop xmlns="\#(ptz)"><ProfileToken>\#(profile.xmlEscaped)</ProfileToken><PanTilt>true</PanTilt><Zoom>true</Zoom></Stop>"#
    }

    public static func getPresets(profile: String) -> String {
        #"<GetPresets xmlns="\#(ptz)"><ProfileToken>\#(profile.xmlEscaped)</ProfileToken></GetPresets>"#
    }

    public static func gotoPreset(profile: String, preset: String) -> String {
        #"<GotoPreset xmlns="\#(ptz)"><ProfileToken>\#(profile.xmlEscaped)</ProfileToken><PresetToken>\#(preset.xmlEscaped)</PresetToken></GotoPreset>"#
    }

    public static func setPreset(profile: String, name: String) -> String {
        #"<SetPreset xmlns="\#(ptz)"><ProfileToken>\#(profile.xmlEscaped)</ProfileToken><PresetName>\#(name.xmlEscaped)</PresetName></SetPreset>"#
    }

    public static func getStatus(profile: String) -> String {
        #"<GetStatus xmlns="\#(ptz)"><ProfileToken>\#(profile.xmlEscaped)</ProfileToken></GetStatus>"#
    }

    /// Up to three decimals, no exponent: `0.5`, `-1`, `0.125`.
    static func decimal(_ x: Double) -> String {
        let milli = Int64(saturating: (x * 1000).rounded())
        let sign = milli < 0 ? "-" : ""
        let m = milli.magnitude
        let whole = m / 1000, fraction = m % 1000
        guard fraction != 0 else { return sign + String(whole) }
        var f = String(fraction)
        while f.utf8.count < 3 { f = "0" + f }
        while f.hasSuffix("0") { f.removeLast() }
        return "\(sign)\(whole).\(f)"
    }
}

/// UTC times as ONVIF writes and reads them, without Foundation.
public enum ONVIFTime {
    /// `2026-11-27T22:40:09Z` for seconds since 1970.
    public static func text(unixSeconds: Int64) -> String {
        let days = unixSeconds >= 0 ? unixSeconds / 86_400 : (unixSeconds - 86_399) / 86_400
        let secondOfDay = unixSeconds - days * 86_400
        let (y, m, d) = civil(days: days)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(y)-\(two(m))-\(two(d))T\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60))Z"
    }

    /// Seconds since 1970 for a civil UTC date and time; nil outside years 1970…9999 or for
    /// fields out of range.
    public static func unixSeconds(year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64) -> Int64? {
        guard (1970...9999).contains(year), (1...12).contains(month), (1...31).contains(day),
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second) else { return nil }
        let y = month <= 2 ? year - 1 : year
        let era = y / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return days * 86_400 + hour * 3600 + minute * 60 + second
    }

    static func civil(days z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
