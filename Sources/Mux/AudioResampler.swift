internal import CFFmpeg
import MediaCore

/// Decoded audio converted to one rate, sample format and channel count (libswresample) and
/// appended to an audio FIFO, from which an encoder takes whole frames. Set up again whenever
/// the decoded frames' own rate, format or channels change. Confined to its owner's thread.
final class AudioResampler {
    let rate: Int32
    let format: AVSampleFormat
    let channels: Int32
    let fifo: OpaquePointer
    private var context: OpaquePointer?
    /// What `context` was set up for: the decoded frames' rate, format and channel count.
    private var input: (rate: Int32, format: Int32, channels: Int32)?
    private let converted: UnsafeMutablePointer<AVFrame>

    init(rate: Int32, format: AVSampleFormat, channels: Int32) throws(FFmpegError) {
        guard let converted = av_frame_alloc() else { throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_frame_alloc") }
        guard let fifo = av_audio_fifo_alloc(format, channels, max(rate, 1)) else {
            var f: UnsafeMutablePointer<AVFrame>? = converted
            av_frame_free(&f)
            throw FFmpegError(code: FFmpegError.posix(ENOMEM), operation: "av_audio_fifo_alloc")
        }
        self.converted = converted
        self.fifo = fifo
        self.rate = rate
        self.format = format
        self.channels = channels
    }

    deinit {
        swr_free(&context)
        av_audio_fifo_free(fifo)
        var f: UnsafeMutablePointer<AVFrame>? = converted
        av_frame_free(&f)
    }

    /// The output's channel layout (the default one for its count).
    func layout() -> AVChannelLayout {
        var l = AVChannelLayout()
        av_channel_layout_default(&l, channels)
        return l
    }

    /// Samples waiting in the FIFO.
    var buffered: Int32 { av_audio_fifo_size(fifo) }

    func reset() { av_audio_fifo_reset(fifo) }

    /// Converts one decoded frame into the FIFO; false when it cannot.
    func append(_ frame: UnsafeMutablePointer<AVFrame>) -> Bool {
        let key = (frame.pointee.sample_rate, frame.pointee.format, frame.pointee.ch_layout.nb_channels)
        if input.map({ $0 != key }) ?? true {
            swr_free(&context)
            var out = layout()
            guard swr_alloc_set_opts2(&context, &out, format, rate, &frame.pointee.ch_layout,
                                      AVSampleFormat(rawValue: frame.pointee.format), frame.pointee.sample_rate, 0, nil) >= 0,
                  swr_init(context) >= 0 else {
                swr_free(&context)
                input = nil
                return false
            }
            input = key
        }
        av_frame_unref(converted)
        var out = layout()
        guard av_channel_layout_copy(&converted.pointee.ch_layout, &out) >= 0 else { return false }
        converted.pointee.sample_rate = rate
        converted.pointee.format = format.rawValue
        guard swr_convert_frame(context, converted, frame) >= 0, converted.pointee.nb_samples > 0 else { return false }
        let planes = UnsafeMutableRawPointer(converted.pointee.extended_data).assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
        return av_audio_fifo_write(fifo, planes, converted.pointee.nb_samples) == converted.pointee.nb_samples
    }

    /// The next `count` samples into `frame` (its buffer made here); false when the FIFO has
    /// fewer or a buffer cannot be had.
    func take(_ count: Int32, into frame: UnsafeMutablePointer<AVFrame>) -> Bool {
        guard av_audio_fifo_size(fifo) >= count else { return false }
        av_frame_unref(frame)
        frame.pointee.nb_samples = count
        frame.pointee.format = format.rawValue
        frame.pointee.sample_rate = rate
        var out = layout()
        guard av_channel_layout_copy(&frame.pointee.ch_layout, &out) >= 0, av_frame_get_buffer(frame, 0) >= 0 else { return false }
        let planes = UnsafeMutableRawPointer(frame.pointee.extended_data).assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
        return av_audio_fifo_read(fifo, planes, count) == count
    }
}

@available(*, unavailable)
extension AudioResampler: Sendable {}
