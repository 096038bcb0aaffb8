package import CFFmpeg

/// The pixel formats LiveRelay asks for by name; anything else a decoder produces is `.other`.
public enum PixelFormat: Sendable, Hashable, CustomStringConvertible {
    case yuv420p, yuvj420p, nv12, rgb24, rgba, bgra, gray8, vaapi
    case other(Int32)

    public init?(name: String) {
        switch name.lowercased() {
        case "yuv420p": self = .yuv420p
        case "yuvj420p": self = .yuvj420p
        case "nv12": self = .nv12
        case "rgb24", "rgb": self = .rgb24
        case "rgba": self = .rgba
        case "bgra": self = .bgra
        case "gray8", "gray": self = .gray8
        default: return nil
        }
    }

    package init(_ f: AVPixelFormat) {
        switch f {
        case AV_PIX_FMT_YUV420P: self = .yuv420p
        case AV_PIX_FMT_YUVJ420P: self = .yuvj420p
        case AV_PIX_FMT_NV12: self = .nv12
        case AV_PIX_FMT_RGB24: self = .rgb24
        case AV_PIX_FMT_RGBA: self = .rgba
        case AV_PIX_FMT_BGRA: self = .bgra
        case AV_PIX_FMT_GRAY8: self = .gray8
        case AV_PIX_FMT_VAAPI: self = .vaapi
        default: self = .other(f.rawValue)
        }
    }

    package init(raw: Int32) { self.init(AVPixelFormat(rawValue: raw)) }

    package var av: AVPixelFormat {
        switch self {
        case .yuv420p: AV_PIX_FMT_YUV420P
        case .yuvj420p: AV_PIX_FMT_YUVJ420P
        case .nv12: AV_PIX_FMT_NV12
        case .rgb24: AV_PIX_FMT_RGB24
        case .rgba: AV_PIX_FMT_RGBA
        case .bgra: AV_PIX_FMT_BGRA
        case .gray8: AV_PIX_FMT_GRAY8
        case .vaapi: AV_PIX_FMT_VAAPI
        case .other(let raw): AVPixelFormat(rawValue: raw)
        }
    }

    public var description: String {
        guard let name = av_get_pix_fmt_name(av) else { return "unknown" }
        return String(cString: name)
    }

    /// True for formats whose first plane is 8-bit luma (stamps can be read straight from it).
    public var hasLumaPlane: Bool {
        switch self {
        case .yuv420p, .yuvj420p, .nv12, .gray8: true
        case .other(let raw):
            // Any planar YUV with 8-bit luma in plane 0.
            if let d = av_pix_fmt_desc_get(AVPixelFormat(rawValue: raw)) {
                d.pointee.flags & UInt64(AV_PIX_FMT_FLAG_RGB) == 0 && d.pointee.flags & UInt64(AV_PIX_FMT_FLAG_HWACCEL) == 0
                    && d.pointee.comp.0.depth == 8 && d.pointee.comp.0.plane == 0 && d.pointee.nb_components >= 1
            } else { false }
        default: false
        }
    }

    public var isHardware: Bool {
        if let d = av_pix_fmt_desc_get(av) { return d.pointee.flags & UInt64(AV_PIX_FMT_FLAG_HWACCEL) != 0 }
        return false
    }
}
