import Foundation
import Synchronization
public import Wire
public import MediaCore
public import Demux

/// What an `onvif://` source resolved to: the camera's profiles, the main stream's (the
/// profile the URL names, else the first), the sub stream's (the smallest other profile), the
/// snapshot URI, and the PTZ service when the main profile has a PTZ configuration. URIs are
/// kept as the camera gave them, without credentials.
public struct ONVIFCamera: Sendable {
    public var profiles: [ONVIFAnswer.Profile]
    public var main: ONVIFAnswer.Profile
    public var mainURI: String
    public var sub: ONVIFAnswer.Profile?
    public var subURI: String?
    public var snapshotURI: String?
    public var ptzService: String?

    /// Chooses the main profile: `named` by token or name (any case), else the first.
    public static func choose(_ profiles: [ONVIFAnswer.Profile], named: String?) -> ONVIFAnswer.Profile? {
        guard let named else { return profiles.first }
        return profiles.first { $0.token == named } ?? profiles.first { $0.name.equalsIgnoringCase(named) || $0.token.equalsIgnoringCase(named) }
    }

    /// The sub stream: of the other profiles, the one with the fewest pixels below the main's.
    public static func subProfile(of main: ONVIFAnswer.Profile, in profiles: [ONVIFAnswer.Profile]) -> ONVIFAnswer.Profile? {
        profiles.filter { $0.token != main.token && $0.area > 0 && (main.area == 0 || $0.area < main.area) }.min { $0.area < $1.area }
    }
}

/// The `onvif://` sources of one engine: each resolved through the camera's device and media
/// services when first opened, kept, and resolved again when opening the kept stream URI fails
/// (a camera that moved its streams, or changed them). The RTSP session is LiveRelay's own
/// client, given the camera's URI with the `onvif://` URL's credentials in it (only when the
/// URI is on the camera's own host: a camera cannot send them elsewhere).
public final class ONVIFCameras: Sendable {
    private let cache = Mutex<[String: ONVIFCamera]>([:])
    /// One client per camera URL: what it learnt of the camera's clock is kept.
    private let clients = Mutex<[String: ONVIFClient]>([:])
    /// Seconds per SOAP call.
    public let timeout: Double

    public init(timeout: Double = 5) {
        self.timeout = timeout
    }

    /// The camera behind `url`, resolved now when `refresh` or when not kept yet.
    public func camera(for url: String, refresh: Bool = false) async -> Result<ONVIFCamera, ONVIFError> {
        if !refresh, let kept = cache.withLock({ $0[url] }) { return .success(kept) }
        guard let client = client(for: url) else { return .failure(ONVIFError(camera: "?", detail: "malformed onvif URL")) }
        let r = await Self.resolve(client, profile: client.url.profile)
        if case .success(let c) = r { cache.withLock { $0[url] = c } }
        return r
    }

    /// The client for `url`; nil when it is not an `onvif://` URL.
    public func client(for url: String) -> ONVIFClient? {
        guard let address = ONVIFURL(url) else { return nil }
        return clients.withLock { c in
            if let kept = c[url] { return kept }
            let made = ONVIFClient(url: address, timeout: timeout)
            c[url] = made
            return made
        }
    }

    /// The kept camera, if resolved.
    public func kept(_ url: String) -> ONVIFCamera? { cache.withLock { $0[url] } }

    public static func resolve(_ client: ONVIFClient, profile named: String?) async -> Result<ONVIFCamera, ONVIFError> {
        let media: String, ptz: String?
        switch await client.services() {
        case .failure(let e): return .failure(e)
        case .success(let s): (media, ptz) = s
        }
        let profiles: [ONVIFAnswer.Profile]
        switch await client.profiles(media: media) {
        case .failure(let e): return .failure(e)
        case .success(let p): profiles = p
        }
        guard let main = ONVIFCamera.choose(profiles, named: named) else {
            let list = profiles.prefix(8).map(\.token).joined(separator: ", ")
            let detail = named.map { "no profile \"\(ONVIFAnswer.printable($0, limit: 64))\" (it has: \(list.isEmpty ? "none" : list))" } ?? "no media profiles"
            return .failure(ONVIFError(camera: client.camera, detail: detail))
        }
        let mainURI: String
        switch await client.streamURI(media: media, profile: main.token) {
        case .failure(let e): return .failure(e)
        case .success(let u): mainURI = u
        }
        let sub = ONVIFCamera.subProfile(of: main, in: profiles)
        var subURI: String?
        if let sub, case .success(let u) = await client.streamURI(media: media, profile: sub.token) { subURI = u }
        var snapshot: String?
        if case .success(let u) = await client.snapshotURI(media: media, profile: main.token) { snapshot = u }
        return .success(ONVIFCamera(profiles: profiles, main: main, mainURI: mainURI, sub: sub, subURI: subURI, snapshotURI: snapshot,
                                    ptzService: main.ptz ? ptz : nil))
    }

    /// `uri` with the credentials of `url`, when it is an RTSP URI on the camera's host.
    public static func withCredentials(_ uri: String, of url: ONVIFURL) -> String {
        guard let user = url.user, !user.isEmpty, let r = RTSPURL(uri), r.host.equalsIgnoringCase(url.host) else { return uri }
        return r.with(user: user, password: url.password ?? "")
    }

    /// Opens the camera's main stream, or with `sub` its sub stream (on the caller's thread: a
    /// source's worker). Resolves the camera first when not kept; when the kept URI fails to
    /// open, resolves again and, if the camera now names another URI, opens that. Main and sub
    /// share what was resolved (one camera, one client).
    public func open(url: String, sub: Bool = false, options: SourceOptions, interruptHandle: InterruptHandle) throws(IngestError) -> any PacketSource {
        guard let address = ONVIFURL(url) else { throw IngestError(.failed, source: url, stage: "resolving ONVIF profiles", detail: "malformed onvif URL") }
        func uri(_ c: ONVIFCamera) throws(IngestError) -> String {
            guard sub else { return c.mainURI }
            guard let u = c.subURI else {
                throw IngestError(.failed, source: url, stage: "resolving ONVIF profiles",
                                  detail: "the camera has no sub stream (no profile smaller than \(ONVIFAnswer.printable(c.main.token, limit: 64)))")
            }
            return u
        }
        var camera = kept(url)
        var resolvedNow = false
        // A sub stream the kept camera had no URI for (a call that failed then) is asked again.
        if camera == nil || (sub && camera?.subURI == nil) {
            camera = try resolveWaiting(url, interruptHandle: interruptHandle)
            resolvedNow = true
        }
        guard let current = camera else { throw IngestError(.failed, source: url, stage: "resolving ONVIF profiles", detail: "no camera") }
        let kept = try uri(current)
        do throws(IngestError) {
            return try openRTSP(Self.withCredentials(kept, of: address), options: options, interruptHandle: interruptHandle)
        } catch {
            guard !resolvedNow, error.kind != .stopped else { throw error }
            guard let again = try? resolveWaiting(url, interruptHandle: interruptHandle), let now = try? uri(again), now != kept else { throw error }
            return try openRTSP(Self.withCredentials(now, of: address), options: options, interruptHandle: interruptHandle)
        }
    }

    /// `rtsp://` by LiveRelay's RTSP client, `rtsps://` by FFmpeg's (TLS); the resolution took
    /// nothing else.
    private func openRTSP(_ uri: String, options: SourceOptions, interruptHandle: InterruptHandle) throws(IngestError) -> any PacketSource {
        if RTSPURL(uri)?.scheme == .rtsps { return try IngestSession(url: uri, options: options, interruptHandle: interruptHandle) }
        return try RTSPSource.open(url: uri, options: options, interruptHandle: interruptHandle)
    }

    /// The camera resolved on the caller's thread, at most `timeout × 6 + 1` seconds, and
    /// given up at once when the source is stopped.
    private func resolveWaiting(_ url: String, interruptHandle: InterruptHandle) throws(IngestError) -> ONVIFCamera {
        let result = Mutex<Result<ONVIFCamera, ONVIFError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let task = Task {
            let r = await camera(for: url, refresh: true)
            result.withLock { $0 = r }
            done.signal()
        }
        let deadline = Date().addingTimeInterval(timeout * 6 + 1)
        while done.wait(timeout: .now() + 0.1) == .timedOut {
            if interruptHandle.isInterrupted {
                task.cancel()
                throw IngestError(.stopped, source: url, stage: "resolving ONVIF profiles", detail: "stopped")
            }
            if Date() > deadline {
                task.cancel()
                throw IngestError(.timedOut, source: url, stage: "resolving ONVIF profiles", detail: "no answer within \(Int(timeout * 6 + 1)) s")
            }
        }
        switch result.withLock({ $0 }) {
        case .success(let c)?: return c
        case .failure(let e)?:
            throw IngestError(e.notAuthorized ? .unauthorized : .failed, source: url, stage: "resolving ONVIF profiles", detail: e.detail)
        case nil: throw IngestError(.failed, source: url, stage: "resolving ONVIF profiles", detail: "no answer")
        }
    }
}
