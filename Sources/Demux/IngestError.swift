public import MediaCore
import Wire

/// Why a source could not be opened or read. Its description is one line, names the source
/// with credentials removed, and says what happened.
public struct IngestError: Error, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// Nothing answered: connection refused, host unreachable, name not found.
        case unreachable
        /// A deadline passed (open, probe or read).
        case timedOut
        /// The bytes were not a stream FFmpeg could parse.
        case invalidData
        /// The source has no stream of the kind we need.
        case noVideoStream
        /// The server refused the request (not found, unavailable, a bad request).
        case refused
        /// The server refused our credentials, or wants some (401, 403).
        case unauthorized
        /// `interrupt()` was called.
        case stopped
        /// Anything else FFmpeg reported.
        case failed
    }

    public let kind: Kind
    /// The source, credentials removed.
    public let source: String
    /// What we were doing: `opening`, `probing streams`, `reading`.
    public let stage: String
    public let detail: String
    public let underlying: FFmpegError?

    public init(_ kind: Kind, source: String, stage: String, detail: String, underlying: FFmpegError? = nil) {
        self.kind = kind
        self.source = Redactor.redact(source)
        self.stage = stage
        self.detail = Redactor.scrub(detail)
        self.underlying = underlying
    }

    public var description: String { "\(source): \(kind.label) while \(stage): \(detail)" }

    /// The source's port answered but it does not serve yet (a camera booting: not found,
    /// unavailable, no answer in time, closed, no media). Not for credentials refused (no tight
    /// loop against a camera that refuses us) nor for a source that did not answer at all.
    public var meansNotServingYet: Bool {
        switch kind {
        case .unreachable, .stopped, .unauthorized: return false
        case .refused, .timedOut, .invalidData, .noVideoStream, .failed: return true
        }
    }

    /// Classifies an FFmpeg failure, trusting our own deadline flag over FFmpeg's code.
    static func classify(_ error: FFmpegError, source: String, stage: String, handle: InterruptHandle, deadline: Double) -> IngestError {
        if handle.didTimeOut {
            return IngestError(.timedOut, source: source, stage: stage,
                               detail: "no answer within \(formatSeconds(deadline))", underlying: error)
        }
        if handle.isInterrupted {
            return IngestError(.stopped, source: source, stage: stage, detail: "stopped", underlying: error)
        }
        let code = error.code
        let kind: Kind
        switch code {
        case FFmpegError.connectionRefused, FFmpegError.posix(113 /* EHOSTUNREACH */), FFmpegError.posix(101 /* ENETUNREACH */),
             FFmpegError.posix(99 /* EADDRNOTAVAIL */):
            kind = .unreachable
        case FFmpegError.timedOut:
            kind = .timedOut
        case FFmpegError.invalidData, FFmpegError.endOfFile:
            kind = .invalidData
        case FFmpegError.protocolNotFound:
            kind = .failed
        default:
            // HTTP-style 4xx replies from RTSP/HTTP servers
            if error.message.utf8Contains("Server returned 401") || error.message.utf8Contains("Server returned 403") { kind = .unauthorized }
            else if error.message.utf8Contains("Server returned 4") { kind = .refused }
            else if error.message.utf8ContainsIgnoringCase("name or service") || error.message.utf8ContainsIgnoringCase("resolv") { kind = .unreachable }
            else { kind = .failed }
        }
        return IngestError(kind, source: source, stage: stage, detail: error.message, underlying: error)
    }
}

extension IngestError.Kind {
    var label: String {
        switch self {
        case .unreachable: "unreachable"
        case .timedOut: "timed out"
        case .invalidData: "invalid data"
        case .noVideoStream: "no video stream"
        case .refused: "refused"
        case .unauthorized: "unauthorized"
        case .stopped: "stopped"
        case .failed: "failed"
        }
    }
}

func formatSeconds(_ s: Double) -> String {
    let tenths = (s * 10).rounded() / 10
    return "\(tenths) s"
}
