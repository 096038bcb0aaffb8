import Testing
@testable import RelayServer
import Relay
import HTTPTypes

/// What each path needs: the archive has its own action.
@Suite struct AccessRequirementTests {
    @Test func theArchiveNeedsPlaybackAndLiveNeedsRead() {
        #expect(AccessRequirement.of(method: .get, path: "/api/recordings/cam") == AccessRequirement(action: .playback, stream: "cam", cors: true))
        #expect(AccessRequirement.of(method: .get, path: "/api/streams/cam").action == .read)
        #expect(AccessRequirement.of(method: .post, path: "/api/recordings/cam").action == .admin)
        #expect(AccessRequirement.of(method: .get, path: "/streams/cam/preview.mjpg") == AccessRequirement(action: .read, stream: "cam", media: true, cors: true))
        #expect(AccessRequirement.of(method: .get, path: "/healthz").action == nil)
    }
}
