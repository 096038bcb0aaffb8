import Foundation
import Wire
public import MediaCore
public import Demux

/// Opens a source by its URL: anything libavformat opens (`rtsp://`, `rtmp://`, `srt://`,
/// `udp://`, files), ONVIF cameras (`onvif://`, resolved to their RTSP streams), and schemes registered by the program (the command registers the stamped
/// `testsrc://` source, which the engine itself knows nothing of).
public struct SourceOpener: Sendable {
    public typealias Open = @Sendable (_ url: String, _ interrupt: InterruptHandle) throws(IngestError) -> any PacketSource
    /// Checks a URL's form without opening it: a one-line problem, or nil.
    public typealias Validate = @Sendable (_ url: String) -> String?

    struct Scheme: Sendable {
        let open: Open
        let validate: Validate
    }

    private var schemes: [String: Scheme] = [:]
    /// The `onvif://` cameras: resolved once, kept, and reached for PTZ by the API.
    public let onvif = ONVIFCameras()

    public init() {}

    /// Opens `name://…` URLs with `open` instead of libavformat.
    public mutating func register(scheme name: String, open: @escaping Open, validate: @escaping Validate) {
        schemes[name.lowercased()] = Scheme(open: open, validate: validate)
    }

    private func scheme(of url: String) -> Scheme? {
        guard let r = url.utf8Range(of: "://") else { return nil }
        return schemes[url[..<r.lowerBound].lowercased()]
    }

    public func open(url: String, options: SourceOptions, interruptHandle: InterruptHandle, pacing: PacingHint? = nil) throws(IngestError) -> any PacketSource {
        if let s = scheme(of: url) { return try s.open(url, interruptHandle) }
        if ExecSource.isExec(url) { return try ExecSource.open(url: url, options: options, interrupt: interruptHandle) }
        if url.hasPrefixIgnoringCase("onvif://") { return try onvif.open(url: url, options: options, interruptHandle: interruptHandle) }
        if let main = Self.onvifMain(ofSub: url) { return try onvif.open(url: main, sub: true, options: options, interruptHandle: interruptHandle) }
        if url.lowercased().hasPrefix("rtsp://") && !options.listen {
            return try RTSPSource.open(url: url, options: options, interruptHandle: interruptHandle)
        }
        return try IngestSession(url: url, options: options, interruptHandle: interruptHandle, pacing: pacing)
    }

    /// Checks a URL's form without opening it (for configuration validation).
    public func validate(url: String) -> String? {
        if let s = scheme(of: url) { return s.validate(url) }
        if ExecSource.isExec(url) { return ExecSource.validate(url) }
        if url.isEmpty { return "empty URL" }
        if url.hasPrefixIgnoringCase("onvif://") || Self.onvifMain(ofSub: url) != nil {
            return ONVIFURL(Self.onvifMain(ofSub: url) ?? url) == nil ? "malformed onvif URL (expected onvif://user:password@host[:port][/profile])" : nil
        }
        if let r = url.utf8Range(of: "://") {
            let scheme = url[..<r.lowerBound].lowercased()
            let known = ["rtsp", "rtsps", "rtmp", "rtmps", "srt", "udp", "tcp", "http", "https", "file", "onvif"] + schemes.keys.sorted()
            if !known.contains(scheme) { return "unsupported scheme \"\(scheme)\" (expected one of \(known.joined(separator: ", ")))" }
        }
        return nil
    }

    /// An ONVIF camera's sub stream (`onvif+sub://…`: a stream's `substream` when its source is
    /// `onvif://…`): the camera's smallest other profile, resolved with the main one.
    public static let onvifSubScheme = "onvif+sub"

    /// The `onvif://` URL whose sub stream `url` is; nil when it is not an `onvif+sub://` URL.
    static func onvifMain(ofSub url: String) -> String? {
        guard url.hasPrefixIgnoringCase(onvifSubScheme + "://") else { return nil }
        return "onvif://" + url.dropFirst(onvifSubScheme.utf8.count + 3)
    }

    /// True when the source ends by itself (files), false for live sources that reconnect.
    public static func isFile(url: String) -> Bool {
        !ExecSource.isExec(url) && (!url.utf8Contains("://") || url.lowercased().hasPrefix("file://"))
    }
}
