public import MediaCore
public import Demux

extension Frame {
    /// Reads the stamp the test source drew into this picture, if any.
    public func readStamp() -> Stamp? {
        withLumaPlane { base, stride in StampCodec.read(luma: base, stride: stride, width: width, height: height) } ?? nil
    }
}

/// The stamped source as the engine and the prober see it: a `testsrc://` scheme and a
/// capture-age reader.
public enum StampedSource {
    /// Reads a picture's capture age from its stamp (for `measure: true` streams and the probe).
    public static let captureAge: @Sendable (Frame) -> Double? = { $0.readStamp()?.ageMilliseconds }
}

extension StampedSource {
    /// The URL scheme: `testsrc://?size=…&fps=…`.
    public static let scheme = "testsrc"

    /// Opens a `testsrc://` URL (register it with the engine's `SourceOpener`).
    public static func open(url: String, interrupt: InterruptHandle) throws(IngestError) -> any PacketSource {
        try TestSource(url: url, interruptHandle: interrupt)
    }

    /// Checks a `testsrc://` URL's keys and values: a one-line problem, or nil.
    public static func validate(url: String) -> String? {
        do { _ = try TestSourceSettings(url: url) } catch { return error.detail }
        return nil
    }
}
