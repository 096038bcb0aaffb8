/// Which decode path to try.
public enum HardwareAcceleration: String, Sendable, Hashable, CaseIterable, Codable {
    /// VAAPI when a DRM render node exists and the device opens, otherwise software.
    case auto
    /// VAAPI; if it cannot be had, software with the reason said.
    case vaapi
    /// Software only.
    case none
}

/// The path a decoder took.
public enum DecoderPath: String, Sendable, Hashable, Codable {
    case vaapi
    case software
}

public struct DecoderOptions: Sendable, Hashable {
    public var hardware: HardwareAcceleration = .auto
    /// DRM render node for VAAPI (default: the first `/dev/dri/renderD*`).
    public var devicePath: String? = nil
    /// `AV_CODEC_FLAG_LOW_DELAY`: output frames as soon as decoded (arrival ordering).
    public var lowDelay: Bool = false
    /// Slice threads (0: FFmpeg picks). Frame threads are never used: they add threads−1
    /// frames of delay.
    public var sliceThreads: Int = 1
    /// Drop frames FFmpeg flags as decoded from damaged data (they are counted either way).
    public var dropCorrupt: Bool = false
    /// Extra hardware surfaces to cover frames held in sink queues.
    public var extraHardwareFrames: Int = 8

    public init() {}
}
