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
