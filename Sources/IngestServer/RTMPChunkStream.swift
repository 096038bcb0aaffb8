/// RTMP's chunk stream, receiving side: the handshake, then chunks (any of the four header
/// forms, extended timestamps, chunk size changes) reassembled into messages. Bytes in, whole
/// messages out; hostile input ends the session with an error, never a trap or unbounded memory.
package struct RTMPChunkReader {
    package struct Message {
        var typeID: UInt8
        var streamID: UInt32
        var timestamp: UInt32
        package var payload: [UInt8]
    }

    enum Failure: Error, CustomStringConvertible {
        case badVersion(UInt8)
        case tooLarge(Int)
        case badHeader(String)
        var description: String {
            switch self {
            case .badVersion(let v): "not RTMP (version byte \(v))"
            case .tooLarge(let n): "message of \(n) bytes is over the limit"
            case .badHeader(let why): why
            }
        }
    }

    /// The largest message taken (a keyframe of a high-bitrate stream fits).
    static let maxMessage = 16 << 20

    private struct ChunkStreamState {
        var timestamp: UInt32 = 0
        var delta: UInt32 = 0
        var length = 0
        var typeID: UInt8 = 0
        var streamID: UInt32 = 0
        var extended = false
        var payload: [UInt8] = []
        var started = false
    }

    private var buffer: [UInt8] = []
    private var readIndex = 0
    private var states: [UInt32: ChunkStreamState] = [:]
    var chunkSize = 128
    private(set) var handshakeDone = false
    private var sentS0S1S2 = false

    package init() {}

    /// Feeds received bytes. Returns the handshake reply to send (once) and complete messages.
    package mutating func feed(_ bytes: some Collection<UInt8>) throws -> (reply: [UInt8]?, messages: [Message]) {
        buffer.append(contentsOf: bytes)
        var reply: [UInt8]? = nil
        var out: [Message] = []
        if !sentS0S1S2 {
            guard available >= 1 + 1536 else { return (nil, []) }
            let version = buffer[readIndex]
            guard version == 3 || version == 6 else { throw Failure.badVersion(version) }
            let c1 = Array(buffer[readIndex + 1..<readIndex + 1537])
            readIndex += 1537
            // S0, S1 (time, zero version: no digest scheme), S2 (C1 echoed).
            var s1 = [UInt8](repeating: 0, count: 1536)
            for i in 8..<1536 { s1[i] = UInt8.random(in: 0...255) }
            reply = [3] + s1 + c1
            sentS0S1S2 = true
        }
        if !handshakeDone {
            guard available >= 1536 else { compact(); return (reply, []) }
            readIndex += 1536
            handshakeDone = true
        }
        while let m = try nextMessage() { out.append(m) }
        compact()
        return (reply, out)
    }

    private var available: Int { buffer.count - readIndex }

    private mutating func compact() {
        if readIndex > 0 && (readIndex > 65536 || readIndex == buffer.count) {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
    }

    private func byte(_ i: Int) -> Int { Int(buffer[readIndex + i]) }
    private func be(_ at: Int, _ n: Int) -> Int { (0..<n).reduce(0) { $0 << 8 | byte(at + $1) } }

    /// One chunk; a message when it completes one. Nil when more bytes are needed.
    private mutating func nextMessage() throws -> Message? {
        while true {
            guard available >= 1 else { return nil }
            let fmt = byte(0) >> 6
            var csid = UInt32(byte(0) & 0x3F)
            var h = 1
            if csid == 0 { guard available >= 2 else { return nil }; csid = UInt32(byte(1)) + 64; h = 2 }
            else if csid == 1 { guard available >= 3 else { return nil }; csid = UInt32(byte(2)) << 8 + UInt32(byte(1)) + 64; h = 3 }
            let headerSize = [11, 7, 3, 0][fmt]
            guard available >= h + headerSize else { return nil }
            var st = states[csid] ?? ChunkStreamState()
            if fmt == 3 && !st.started { throw Failure.badHeader("continuation on chunk stream \(csid) that never began") }
            var tsField: UInt32 = 0
            if fmt <= 2 { tsField = UInt32(be(h, 3)) }
            if fmt <= 1 {
                st.length = be(h + 3, 3)
                st.typeID = UInt8(byte(h + 6))
                guard st.length <= Self.maxMessage else { throw Failure.tooLarge(st.length) }
                // A new message header in the middle of a message: the partial one is abandoned
                // (found by fuzzing: a shorter length under a longer partial payload).
                st.payload = []
            }
            if fmt == 0 { st.streamID = UInt32(byte(h + 7)) | UInt32(byte(h + 8)) << 8 | UInt32(byte(h + 9)) << 16 | UInt32(byte(h + 10)) << 24 }
            var pos = h + headerSize
            let extended = fmt <= 2 ? tsField == 0xFFFFFF : st.extended
            if extended {
                guard available >= pos + 4 else { return nil }
                tsField = UInt32(be(pos, 4))
                pos += 4
            }
            let startingMessage = st.payload.isEmpty
            let want = min(chunkSize, st.length - st.payload.count)
            guard available >= pos + want else { return nil }
            // The header is complete: commit it.
            if fmt == 0 { st.timestamp = tsField; st.delta = tsField }
            else if fmt <= 2 { st.delta = tsField; if startingMessage { st.timestamp &+= tsField } }
            else if startingMessage && st.started { st.timestamp &+= st.delta }
            if fmt <= 2 { st.extended = extended }
            st.started = true
            st.payload.append(contentsOf: buffer[readIndex + pos..<readIndex + pos + want])
            readIndex += pos + want
            if st.payload.count >= st.length {
                let m = Message(typeID: st.typeID, streamID: st.streamID, timestamp: st.timestamp, payload: st.payload)
                st.payload = []
                states[csid] = st
                if m.typeID == 1, m.payload.count >= 4 {
                    let size = (Int(m.payload[0]) << 24 | Int(m.payload[1]) << 16 | Int(m.payload[2]) << 8 | Int(m.payload[3])) & 0x7FFF_FFFF
                    guard size >= 1 else { throw Failure.badHeader("chunk size \(size)") }
                    chunkSize = min(size, 1 << 24)
                }
                return m
            }
            states[csid] = st
            guard states.count <= 64 else { throw Failure.badHeader("too many chunk streams") }
            // Partial messages across all chunk streams stay bounded too.
            guard states.values.reduce(0, { $0 + $1.payload.count }) <= Self.maxMessage * 2 else { throw Failure.tooLarge(Self.maxMessage * 2) }
        }
    }
}

/// The sending side: messages cut into chunks of `chunkSize` (type-0 header, then type-3).
package enum RTMPChunkWriter {
    package static func chunks(csid: UInt8, typeID: UInt8, streamID: UInt32, timestamp: UInt32 = 0, payload: [UInt8], chunkSize: Int) -> [UInt8] {
        var out: [UInt8] = [csid & 0x3F]
        out += [UInt8(timestamp >> 16 & 0xFF), UInt8(timestamp >> 8 & 0xFF), UInt8(timestamp & 0xFF)]
        out += [UInt8(payload.count >> 16 & 0xFF), UInt8(payload.count >> 8 & 0xFF), UInt8(payload.count & 0xFF), typeID]
        out += [UInt8(streamID & 0xFF), UInt8(streamID >> 8 & 0xFF), UInt8(streamID >> 16 & 0xFF), UInt8(streamID >> 24 & 0xFF)]
        var i = 0
        while i < payload.count {
            if i > 0 { out.append(0xC0 | (csid & 0x3F)) }
            let n = min(chunkSize, payload.count - i)
            out += payload[i..<i + n]
            i += n
        }
        return out
    }

    package static func u32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
}
