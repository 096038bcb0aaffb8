public import MediaCore
public import Demux
import Mux
import Foundation

/// Opens any source LiveRelay knows by its URL: `testsrc://` (the built-in stamped source) or
/// anything libavformat opens (`rtsp://`, `rtmp://`, `srt://`, `udp://`, files).
public enum SourceFactory {
    public static func open(url: String, options: SourceOptions, interruptHandle: InterruptHandle, pacing: PacingHint? = nil) throws(IngestError) -> any PacketSource {
        if url.lowercased().hasPrefix("testsrc://") {
            return try TestSource(url: url, interruptHandle: interruptHandle)
        }
        return try IngestSession(url: url, options: options, interruptHandle: interruptHandle, pacing: pacing)
    }

    /// Checks a URL's form without opening it (for configuration validation).
    public static func validate(url: String) -> String? {
        if url.lowercased().hasPrefix("testsrc://") {
            do { _ = try TestSourceSettings(url: url) } catch { return error.detail }
            return nil
        }
        if url.isEmpty { return "empty URL" }
        if let r = url.range(of: "://") {
            let scheme = url[..<r.lowerBound].lowercased()
            let known = ["rtsp", "rtsps", "rtmp", "rtmps", "srt", "udp", "tcp", "http", "https", "file"]
            if !known.contains(scheme) { return "unsupported scheme \"\(scheme)\" (expected one of \(known.joined(separator: ", ")), testsrc)" }
        }
        return nil
    }

    /// True when the source ends by itself (files), false for live sources that reconnect.
    public static func isFile(url: String) -> Bool {
        !url.contains("://") || url.lowercased().hasPrefix("file://")
    }
}
