import NIOCore

/// The wall's binary frame (server → page), defined once: `WallRoutes` writes it with
/// `encode`, and the page reads it with the constants `javascript` puts into it, so the two
/// cannot drift (`WallFrameTests` checks the page uses them and no bare number).
///
/// A 21-byte header — kind, flags, slot (UInt16), arrival (or, with `capture`, the sender's
/// capture) wall-clock ms (Float64), timestamp µs (Int64), codec length (UInt8) — then the codec
/// string and the payload. Big-endian.
enum WallFrame {
    enum Kind: UInt8 {
        case h264 = 1
        case jpeg = 2
        /// Audio of the tile the viewer listens to; the codec field is `AudioChunk.configuration`.
        case audio = 3
    }

    struct Flags: OptionSet {
        let rawValue: UInt8
        /// A keyframe (JPEG pictures are all key).
        static let key = Flags(rawValue: 1)
        /// The decoder starts again (a new source generation, or a resync).
        static let restart = Flags(rawValue: 2)
        /// The signal-lost slate.
        static let slate = Flags(rawValue: 4)
        /// The time is the sender's capture time, not the arrival.
        static let capture = Flags(rawValue: 8)
    }

    /// Byte offsets in the header.
    enum Offset {
        static let kind = 0, flags = 1, slot = 2, time = 4, timestamp = 12, codecLength = 20
        static let headerSize = 21
    }

    static func encode(kind: Kind, flags: Flags, slot: Int, wallMillis: Double, timestamp: Int64, codec: String, payload: [UInt8]) -> ByteBuffer {
        let codecBytes = Array(codec.utf8.prefix(255))
        var b = ByteBufferAllocator().buffer(capacity: Offset.headerSize + codecBytes.count + payload.count)
        b.writeInteger(kind.rawValue)
        b.writeInteger(flags.rawValue)
        b.writeInteger(UInt16(clamping: slot))
        b.writeInteger(wallMillis.bitPattern)
        b.writeInteger(timestamp)
        b.writeInteger(UInt8(codecBytes.count))
        b.writeBytes(codecBytes)
        b.writeBytes(payload)
        return b
    }

    /// The constants as a JavaScript object the page reads frames with.
    static var javascript: String {
        "const WF = {KIND_H264: \(Kind.h264.rawValue), KIND_JPEG: \(Kind.jpeg.rawValue), KIND_AUDIO: \(Kind.audio.rawValue), "
            + "KEY: \(Flags.key.rawValue), RESTART: \(Flags.restart.rawValue), SLATE: \(Flags.slate.rawValue), CAPTURE: \(Flags.capture.rawValue), "
            + "KIND: \(Offset.kind), FLAGS: \(Offset.flags), SLOT: \(Offset.slot), TIME: \(Offset.time), TIMESTAMP: \(Offset.timestamp), "
            + "CODEC_LENGTH: \(Offset.codecLength), HEADER: \(Offset.headerSize)};"
    }
}
