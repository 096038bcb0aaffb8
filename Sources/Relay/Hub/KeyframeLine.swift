import MediaCore
import Synchronization

/// The stream's current source, where it takes keyframe requests.
final class KeyframeLine: Sendable {
    private let current = Mutex<(any KeyframeRequesting)?>(nil)

    func source(_ s: (any KeyframeRequesting)?) {
        current.withLock { $0 = s }
    }

    func request() -> Bool {
        guard let source = current.withLock({ $0 }) else { return false }
        source.requestKeyframe()
        return true
    }
}

/// The stream's current source's talk path.
final class TalkLine: Sendable {
    private let current = Mutex<(any TalkTarget)?>(nil)

    func source(_ s: AnyObject) {
        let t = (s as? any TalkPathProviding)?.talkTarget
        current.withLock { $0 = t }
    }

    /// The path, while its session lasts.
    var target: (any TalkTarget)? {
        guard let t = current.withLock({ $0 }), !t.isClosed else { return nil }
        return t
    }
}
