import Foundation
import MediaCore
import Synchronization
public import Wire

/// Why an ONVIF call failed: one line naming the camera (host and port, never its
/// credentials) and what went wrong.
public struct ONVIFError: Error, Sendable, CustomStringConvertible {
    public let camera: String
    public let detail: String
    /// The camera refused the credentials (or wants some).
    public let notAuthorized: Bool

    public init(camera: String, detail: String, notAuthorized: Bool = false) {
        self.camera = camera
        self.detail = detail
        self.notAuthorized = notAuthorized
    }

    public var description: String { "ONVIF camera \(camera): \(detail)" }
}

/// SOAP calls to one ONVIF camera over HTTP (BoundedHTTP: SwiftNIO's parser, a deadline per
/// call, answers capped at 1 MiB, redirects not followed: a signed request goes to the camera's
/// own address and nowhere else), each signed with a fresh WS-Security UsernameToken. A camera
/// whose clock is off refuses the token's time: after a refusal the client reads the camera's
/// clock once and signs with it.
public final class ONVIFClient: Sendable {
    public let url: ONVIFURL
    public let timeout: Double
    /// The camera's clock minus this machine's, in seconds.
    private let clockOffset = Mutex<Int64>(0)

    public init(url: ONVIFURL, timeout: Double = 5) {
        self.url = url
        self.timeout = timeout
    }

    /// Host and port: what messages name.
    public var camera: String { url.authority }

    private var credentials: (user: String, password: String)? {
        guard let user = url.user, !user.isEmpty else { return nil }
        return (user, url.password ?? "")
    }

    /// One call: `body` to `service` (a full URL on this camera), the answer's body element back.
    public func call(_ service: String, _ body: String) async -> Result<XMLElement, ONVIFError> {
        let first = await send(service, body, signed: true)
        guard case .failure(let e) = first, e.notAuthorized, credentials != nil else { return first }
        // Refused: perhaps the clock. Read the camera's (open by the standard) and sign again if it differs.
        guard case .success(let answer) = await send(url.deviceService, ONVIFRequest.getSystemDateAndTime, signed: false),
              let theirs = ONVIFAnswer.systemTime(answer) else { return first }
        // Signed with the camera's clock from now on (back to this machine's when they agree again).
        var skew = theirs - Int64(Date().timeIntervalSince1970)
        if abs(skew) <= 5 { skew = 0 }
        guard abs(skew - clockOffset.withLock { $0 }) > 5 else { return first }
        clockOffset.withLock { $0 = skew }
        return await send(service, body, signed: true)
    }

    private func send(_ service: String, _ body: String, signed: Bool) async -> Result<XMLElement, ONVIFError> {
        var nonce = [UInt8](repeating: 0, count: 16)
        var g = SystemRandomNumberGenerator()
        for i in nonce.indices { nonce[i] = g.next() }
        let created = ONVIFTime.text(unixSeconds: Int64(Date().timeIntervalSince1970) + clockOffset.withLock { $0 })
        let envelope = ONVIFRequest.envelope(body: body, credentials: signed ? credentials : nil, nonce: nonce, created: created)
        let answer: BoundedHTTP.Answer
        switch await BoundedHTTP.send(method: "POST", url: service, headers: [("Content-Type", "application/soap+xml; charset=utf-8")],
                                      body: envelope, timeout: timeout, maxBody: XMLTree.defaultMaxBytes, followRedirects: false) {
        case .success(let a): answer = a
        case .failure(let f): return .failure(ONVIFError(camera: camera, detail: Redactor.scrub(f.description)))
        }
        switch ONVIFAnswer.body(answer.body) {
        case .success(let element):
            guard (200..<300).contains(answer.status) else { return .failure(ONVIFError(camera: camera, detail: "HTTP \(answer.status)")) }
            return .success(element)
        case .failure(.fault(let reason, let unauthorized)):
            let refused = unauthorized || answer.status == 401
            return .failure(ONVIFError(camera: camera, detail: refused ? "not authorized (\(reason))" : "SOAP fault: \(reason)", notAuthorized: refused))
        case .failure(let f):
            if answer.status == 401 || answer.status == 403 {
                return .failure(ONVIFError(camera: camera, detail: "not authorized (HTTP \(answer.status))", notAuthorized: true))
            }
            return .failure(ONVIFError(camera: camera, detail: (200..<300).contains(answer.status) ? f.description : "HTTP \(answer.status): \(f)"))
        }
    }

    // MARK: the calls a relay makes

    public func deviceInformation() async -> Result<ONVIFAnswer.DeviceInformation, ONVIFError> {
        await call(url.deviceService, ONVIFRequest.getDeviceInformation).map(ONVIFAnswer.deviceInformation)
    }

    /// The media and PTZ services, moved to the host and port the camera was reached at.
    public func services() async -> Result<(media: String, ptz: String?), ONVIFError> {
        switch await call(url.deviceService, ONVIFRequest.getCapabilities) {
        case .failure(let e): return .failure(e)
        case .success(let answer):
            let c = ONVIFAnswer.capabilities(answer)
            guard let media = c.media.flatMap(url.sameHost) else { return .failure(ONVIFError(camera: camera, detail: "no media service in its capabilities")) }
            return .success((media, c.ptz.flatMap(url.sameHost)))
        }
    }

    public func profiles(media: String) async -> Result<[ONVIFAnswer.Profile], ONVIFError> {
        await call(media, ONVIFRequest.getProfiles).map(ONVIFAnswer.profiles)
    }

    /// The profile's RTSP URI, without credentials.
    public func streamURI(media: String, profile: String) async -> Result<String, ONVIFError> {
        await uri(call(media, ONVIFRequest.getStreamURI(profile: profile)), what: "rtsp:// stream URI") { ONVIFAnswer.streamURI($0)?.withoutCredentials }
    }

    public func snapshotURI(media: String, profile: String) async -> Result<String, ONVIFError> {
        await uri(call(media, ONVIFRequest.getSnapshotURI(profile: profile)), what: "http:// snapshot URI", ONVIFAnswer.snapshotURI)
    }

    private func uri(_ r: Result<XMLElement, ONVIFError>, what: String, _ read: (XMLElement) -> String?) async -> Result<String, ONVIFError> {
        switch r {
        case .failure(let e): return .failure(e)
        case .success(let answer):
            guard let u = read(answer) else { return .failure(ONVIFError(camera: camera, detail: "no \(what) in its answer")) }
            return .success(u)
        }
    }
}
