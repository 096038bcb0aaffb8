import Wire

/// Bytes received on the RTSP control connection and not yet taken, split into frames by
/// Wire's RTSP framer (the client's side: responses and interleaved media).
final class ByteQueue {
    private var buffer: [UInt8] = []
    private var start = 0

    /// The client's limits: a camera's response head up to 64 KiB, its body (an SDP) up to 1 MiB.
    static let framer = RTSPFramer.camera

    func append<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    var available: Int { buffer.count - start }

    /// Drops the next `n` bytes (at most what is there).
    func consume(_ n: Int) { start += min(max(0, n), buffer.count - start) }

    /// The next whole frame at the read position, consumed; nil if more bytes are needed.
    /// Bytes that start neither a response nor interleaved data (a server's stray data) are
    /// skipped and consumed.
    func nextFrame() throws(WireError) -> RTSPFrame? {
        let step: RTSPFramer.Step
        do throws(RTSPMessageError) {
            step = try Self.framer.next(in: buffer[start...])
        } catch {
            throw .invalid(error.description)
        }
        switch step {
        case .frame(let frame, let consumed):
            consume(consumed)
            return frame
        case .needsMore(let consumed):
            consume(consumed)
            return nil
        }
    }
}
