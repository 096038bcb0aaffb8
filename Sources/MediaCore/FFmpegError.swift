internal import CFFmpeg

/// An FFmpeg return code that signalled failure, with the operation that returned it.
public struct FFmpegError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The raw (negative) FFmpeg error code.
    public let code: Int32
    /// The libav* call or step that failed, e.g. `avformat_open_input`.
    public let operation: String

    public init(code: Int32, operation: String) {
        self.code = code
        self.operation = operation
    }

    /// FFmpeg's own text for the code (`av_strerror`).
    public var message: String { FFmpegError.describe(code) }

    public var description: String { "\(operation): \(message)" }

    public static func describe(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        if av_strerror(code, &buffer, buffer.count) < 0 {
            return "error \(code)"
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public var isEndOfFile: Bool { code == FFmpegError.endOfFile }
    public var isTryAgain: Bool { code == FFmpegError.tryAgain }
    public var isExit: Bool { code == FFmpegError.exit }
    public var isInvalidData: Bool { code == FFmpegError.invalidData }

    public static let endOfFile = lr_averror_eof()
    public static let tryAgain = lr_averror_eagain()
    public static let exit = lr_averror_exit()
    public static let invalidData = lr_averror_invaliddata()
    public static let external = lr_averror_external()
    public static let timedOut = lr_averror_etimedout()
    public static let io = lr_averror_eio()
    public static let connectionRefused = lr_averror_econnrefused()
    public static let streamNotFound = lr_averror_stream_not_found()
    public static let decoderNotFound = lr_averror_decoder_not_found()
    public static let protocolNotFound = lr_averror_protocol_not_found()

    public static func posix(_ errno: Int32) -> Int32 { lr_averror(errno) }
}

/// The one chokepoint that turns an FFmpeg return code into a thrown error.
@discardableResult
package func ffcheck(_ code: Int32, _ operation: @autoclosure () -> String) throws(FFmpegError) -> Int32 {
    if code < 0 { throw FFmpegError(code: code, operation: operation()) }
    return code
}
