internal import CFFmpeg

/// What this process's FFmpeg is: its libraries' versions, and the hardware it knows how to use
/// (device types built in, hardware decoders and encoders compiled in). Present in the build is
/// not working on this machine: the decoder's `get_format` negotiation says that.
public enum FFmpegInfo {
    /// `libavformat 59.27.100`, … for the libraries LiveRelay links.
    public static var libraries: [(name: String, version: String)] {
        func v(_ n: UInt32) -> String { "\(n >> 16).\((n >> 8) & 0xFF).\(n & 0xFF)" }
        return [("libavformat", v(avformat_version())), ("libavcodec", v(avcodec_version())),
                ("libavutil", v(avutil_version())), ("libswscale", v(swscale_version()))]
    }

    /// Hardware device types this FFmpeg was built with (`vaapi`, `cuda`, `drm`, …).
    public static var hardwareDevices: [String] {
        var out: [String] = []
        var t = av_hwdevice_iterate_types(AV_HWDEVICE_TYPE_NONE)
        while t != AV_HWDEVICE_TYPE_NONE {
            if let name = av_hwdevice_get_type_name(t) { out.append(String(cString: name)) }
            t = av_hwdevice_iterate_types(t)
        }
        return out
    }

    /// Video codecs of this build that run on hardware: names of decoders and of encoders
    /// (`h264_vaapi`, `h264_nvenc`, `h264_v4l2m2m`, …), and decoders that take a hardware device
    /// through `get_format` (`h264` with vaapi, …) are the device types above.
    public static var hardwareCodecs: (decoders: [String], encoders: [String]) {
        var decoders: [String] = [], encoders: [String] = []
        var opaque: UnsafeMutableRawPointer?
        while let c = av_codec_iterate(&opaque) {
            guard c.pointee.type == AVMEDIA_TYPE_VIDEO else { continue }
            let hardware = c.pointee.capabilities & Int32(AV_CODEC_CAP_HARDWARE) != 0
            guard hardware, let name = c.pointee.name else { continue }
            if av_codec_is_encoder(c) != 0 { encoders.append(String(cString: name)) } else { decoders.append(String(cString: name)) }
        }
        return (decoders.sorted(), encoders.sorted())
    }
}
