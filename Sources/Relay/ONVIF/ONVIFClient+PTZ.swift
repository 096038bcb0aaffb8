public import Wire

/// PTZ through a camera's PTZ service, for the profile that has the PTZ configuration.
extension ONVIFClient {
    public struct PTZ: Sendable {
        public let service: String
        public let profile: String

        public init(service: String, profile: String) {
            self.service = service
            self.profile = profile
        }
    }

    /// Moves at the given velocities (−1…1) until stopped, or for `timeout` seconds when given.
    public func move(_ ptz: PTZ, pan: Double, tilt: Double, zoom: Double, timeout: Double? = nil) async -> Result<Void, ONVIFError> {
        await call(ptz.service, ONVIFRequest.continuousMove(profile: ptz.profile, pan: pan, tilt: tilt, zoom: zoom, timeoutSeconds: timeout)).map { _ in }
    }

    public func stop(_ ptz: PTZ) async -> Result<Void, ONVIFError> {
        await call(ptz.service, ONVIFRequest.stop(profile: ptz.profile)).map { _ in }
    }

    public func presets(_ ptz: PTZ) async -> Result<[ONVIFAnswer.Preset], ONVIFError> {
        await call(ptz.service, ONVIFRequest.getPresets(profile: ptz.profile)).map(ONVIFAnswer.presets)
    }

    public func goToPreset(_ ptz: PTZ, token: String) async -> Result<Void, ONVIFError> {
        await call(ptz.service, ONVIFRequest.gotoPreset(profile: ptz.profile, preset: token)).map { _ in }
    }

    /// Saves the current position under `name`; the camera's token for it.
    public func setPreset(_ ptz: PTZ, name: String) async -> Result<String, ONVIFError> {
        switch await call(ptz.service, ONVIFRequest.setPreset(profile: ptz.profile, name: name)) {
        case .failure(let e): return .failure(e)
        case .success(let answer):
            guard let token = ONVIFAnswer.presetToken(answer) else { return .failure(ONVIFError(camera: camera, detail: "no preset token in its answer")) }
            return .success(token)
        }
    }

    /// Where the camera points now; nil when its status says nothing readable.
    public func position(_ ptz: PTZ) async -> Result<ONVIFAnswer.Position?, ONVIFError> {
        await call(ptz.service, ONVIFRequest.getStatus(profile: ptz.profile)).map(ONVIFAnswer.status)
    }
}
