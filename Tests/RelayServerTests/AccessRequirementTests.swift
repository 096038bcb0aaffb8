import Access
import Testing
import TestSupport
@testable import RelayServer
import Relay
import HTTPTypes

/// What each path needs: the archive has its own action.
@Suite(.ownThreads, .tags(.fast)) struct AccessRequirementTests {
    @Test func theArchiveNeedsPlaybackAndLiveNeedsRead() {
        #expect(AccessRequirement.of(method: .get, path: "/api/recordings/cam") == AccessRequirement(action: .playback, stream: "cam", cors: true))
        #expect(AccessRequirement.of(method: .get, path: "/api/streams/cam").action == .read)
        #expect(AccessRequirement.of(method: .post, path: "/api/recordings/cam").action == .admin)
        #expect(AccessRequirement.of(method: .get, path: "/streams/cam/preview.mjpg") == AccessRequirement(action: .read, stream: "cam", media: true, cors: true))
        #expect(AccessRequirement.of(method: .get, path: "/healthz").action == nil)
        // Played back: playback; exported: export; both with `?token=` (a player adds no header).
        for p in ["/streams/cam/recording.m3u8", "/streams/cam/recording/cam-20261125-152532.mp4"] {
            #expect(AccessRequirement.of(method: .get, path: p) == AccessRequirement(action: .playback, stream: "cam", media: true, cors: true), "\(p)")
        }
        for p in ["/streams/cam/recording.mp4", "/streams/cam/recording.json"] {
            #expect(AccessRequirement.of(method: .get, path: p) == AccessRequirement(action: .export, stream: "cam", media: true, cors: true), "\(p)")
        }
        // Steering a camera, and even asking where it points: ptz, on that stream.
        for (method, path) in [(HTTPRequest.Method.post, "/api/streams/cam/ptz"), (.get, "/api/streams/cam/ptz"), (.get, "/api/streams/cam/ptz/presets")] {
            #expect(AccessRequirement.of(method: method, path: path) == AccessRequirement(action: .ptz, stream: "cam", cors: true), "\(method) \(path)")
        }
        // Incidents and bookmarks: made and changed with incident, viewed with playback, exported
        // with export (each stream asked again by the handler); the node's key with read.
        #expect(AccessRequirement.of(method: .post, path: "/api/incidents").action == .incident)
        #expect(AccessRequirement.of(method: .patch, path: "/api/incidents/3").action == .incident)
        #expect(AccessRequirement.of(method: .post, path: "/api/bookmarks").action == .incident)
        #expect(AccessRequirement.of(method: .get, path: "/api/incidents").action == .playback)
        #expect(AccessRequirement.of(method: .get, path: "/api/incidents/3").action == .playback)
        #expect(AccessRequirement.of(method: .get, path: "/api/bookmarks").action == .playback)
        #expect(AccessRequirement.of(method: .get, path: "/api/incidents/3/export").action == .export)
        #expect(AccessRequirement.of(method: .delete, path: "/api/incidents/3").action == .incident)
        #expect(AccessRequirement.of(method: .get, path: "/api/keys").action == .read)
        // The live HLS is still read; the audit log is the admin's.
        #expect(AccessRequirement.of(method: .get, path: "/streams/cam/hls/index.m3u8").action == .read)
        #expect(AccessRequirement.of(method: .get, path: "/api/audit").action == .admin)
    }
}
