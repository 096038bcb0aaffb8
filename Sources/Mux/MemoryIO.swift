internal import CFFmpeg
import MediaCore

/// A non-seekable AVIOContext that writes into memory: a muxer's `pb` whose output collects in
/// `bytes` as it is flushed. Owned by the muxer it serves and freed after it (a muxer frees its
/// format context first, in its deinit body; this is freed with its stored properties).
final class MemoryIO {
    /// What the AVIO flushed since the owner last took it.
    final class Sink {
        var bytes: [UInt8] = []
    }

    let sink = Sink()
    private(set) var context: UnsafeMutablePointer<AVIOContext>

    init(bufferSize: Int32) throws(FFmpegError) {
        guard let buffer = av_malloc(Int(bufferSize))?.assumingMemoryBound(to: UInt8.self) else {
            throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_malloc")
        }
        // Safety: `sink` is retained by self and outlives the AVIOContext freed in deinit.
        guard let io = avio_alloc_context(buffer, bufferSize, 1, Unmanaged.passUnretained(sink).toOpaque(), nil, { opaque, buf, n in
            guard let opaque, let buf, n > 0 else { return n }
            Unmanaged<Sink>.fromOpaque(opaque).takeUnretainedValue().bytes.append(contentsOf: UnsafeBufferPointer(start: buf, count: Int(n)))
            return n
        }, nil) else {
            av_free(buffer)
            throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "avio_alloc_context")
        }
        io.pointee.seekable = 0
        context = io
    }

    deinit {
        av_freep(&context.pointee.buffer)
        var io: UnsafeMutablePointer<AVIOContext>? = context
        avio_context_free(&io)
    }

    /// Pushes what the AVIO buffers into `bytes`.
    func flush() { avio_flush(context) }
}

@available(*, unavailable)
extension MemoryIO: Sendable {}
