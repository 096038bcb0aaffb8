public import MediaCore
import Synchronization

/// Tells a realtime file source how soon its consumers need packets. While nobody needs a
/// packet before the next keyframe (a classic HLS segmenter or a recorder, woken at keyframes;
/// no decoding preview, no forward, no LL-HLS), the source releases a keyframe's packets
/// together when the keyframe comes due: what those consumers see, and when, is unchanged, and
/// the source wakes once per keyframe instead of once per packet. Live sources ignore it.
public final class PacingHint: Sendable {
    private let atKeyframes = Atomic<Bool>(false)

    public init(releasesAtKeyframes: Bool = false) {
        atKeyframes.store(releasesAtKeyframes, ordering: .relaxed)
    }

    public var releasesAtKeyframes: Bool {
        get { atKeyframes.load(ordering: .relaxed) }
        set { atKeyframes.store(newValue, ordering: .relaxed) }
    }
}

/// Packets read ahead with the times they come due, in order (a ring would save nothing at
/// these sizes: at most a keyframe interval of packets).
struct HeldPackets {
    private var packets: [Packet] = []
    private var dues: [UInt64] = []
    private var head = 0

    var isEmpty: Bool { head == packets.count }
    var count: Int { packets.count - head }
    var last: Packet? { isEmpty ? nil : packets.last }
    var firstDue: UInt64 { dues[head] }
    var lastDue: UInt64 { dues[dues.count - 1] }

    mutating func append(_ p: Packet, due: UInt64) {
        if isEmpty { packets.removeAll(keepingCapacity: true); dues.removeAll(keepingCapacity: true); head = 0 }
        packets.append(p)
        dues.append(due)
    }

    mutating func removeFirst() -> Packet {
        let p = packets[head]
        head += 1
        return p
    }
}
