public import MediaCore

/// A decoder could not be set up.
public struct DecodeError: Error, Sendable, CustomStringConvertible {
    public let codec: String
    public let detail: String
    public let underlying: FFmpegError?

    public init(codec: String, detail: String, underlying: FFmpegError? = nil) {
        self.codec = codec
        self.detail = detail
        self.underlying = underlying
    }

    public var description: String { "decoder \(codec): \(detail)" }
}
