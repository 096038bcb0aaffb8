/// `POST /api/streams/{name}/ptz`: steer an ONVIF camera. `move` starts a continuous move at
/// the given velocities (each −1…1; `timeout` seconds at most when given) until `stop`;
/// `goto` goes to a preset by its token; `set` saves the current position as a preset named
/// `name` and answers its token.
public struct PTZCommand: Sendable, Codable, Equatable {
    public enum Action: String, Sendable, Codable {
        case move, stop, goto, set
    }

    public var action: Action
    public var pan: Double?
    public var tilt: Double?
    public var zoom: Double?
    public var timeout: Double?
    public var preset: String?
    public var name: String?

    public init(action: Action, pan: Double? = nil, tilt: Double? = nil, zoom: Double? = nil, timeout: Double? = nil,
                preset: String? = nil, name: String? = nil) {
        self.action = action
        self.pan = pan
        self.tilt = tilt
        self.zoom = zoom
        self.timeout = timeout
        self.preset = preset
        self.name = name
    }
}

/// A PTZ command's answer: what was done, and the new preset's token for `set`.
public struct PTZResult: Sendable, Codable, Equatable {
    public var action: PTZCommand.Action
    public var preset: String?

    public init(action: PTZCommand.Action, preset: String? = nil) {
        self.action = action
        self.preset = preset
    }
}

/// A preset of the camera, and where it points when the camera says.
public struct PTZPreset: Sendable, Codable, Equatable {
    public var token: String
    public var name: String
    public var position: PTZPosition?

    public init(token: String, name: String, position: PTZPosition? = nil) {
        self.token = token
        self.name = name
        self.position = position
    }
}

/// Pan and tilt (−1…1) and zoom (0…1) in the camera's generic space; each nil when the
/// camera did not say.
public struct PTZPosition: Sendable, Codable, Equatable {
    public var pan: Double?
    public var tilt: Double?
    public var zoom: Double?

    public init(pan: Double? = nil, tilt: Double? = nil, zoom: Double? = nil) {
        self.pan = pan
        self.tilt = tilt
        self.zoom = zoom
    }
}

/// `GET /api/streams/{name}/ptz`: where the camera points, and its presets.
public struct PTZStatus: Sendable, Codable, Equatable {
    public var stream: String
    /// The ONVIF profile PTZ requests name.
    public var profile: String
    public var position: PTZPosition?
    public var presets: [PTZPreset]

    public init(stream: String, profile: String, position: PTZPosition?, presets: [PTZPreset]) {
        self.stream = stream
        self.profile = profile
        self.position = position
        self.presets = presets
    }
}
