#ifndef LIVERELAY_CFFMPEG_SHIM_H
#define LIVERELAY_CFFMPEG_SHIM_H

// What Swift cannot import from FFmpeg's headers (function-like and tag-built macros,
// compound literals) is re-exported here as static inline functions.

#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/hwcontext.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libavutil/log.h>
#include <libavutil/dict.h>
#include <libavutil/time.h>
#include <libswscale/swscale.h>
#include <errno.h>
#include <stdio.h>
#include <stdarg.h>

static inline int lr_averror(int e) { return AVERROR(e); }
static inline int lr_averror_eof(void) { return AVERROR_EOF; }
static inline int lr_averror_exit(void) { return AVERROR_EXIT; }
static inline int lr_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int lr_averror_external(void) { return AVERROR_EXTERNAL; }
static inline int lr_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int lr_averror_etimedout(void) { return AVERROR(ETIMEDOUT); }
static inline int lr_averror_eio(void) { return AVERROR(EIO); }
static inline int lr_averror_econnrefused(void) { return AVERROR(ECONNREFUSED); }
static inline int lr_averror_stream_not_found(void) { return AVERROR_STREAM_NOT_FOUND; }
static inline int lr_averror_decoder_not_found(void) { return AVERROR_DECODER_NOT_FOUND; }
static inline int lr_averror_protocol_not_found(void) { return AVERROR_PROTOCOL_NOT_FOUND; }
static inline int lr_averror_http_not_found(void) { return AVERROR_HTTP_NOT_FOUND; }
static inline int64_t lr_nopts_value(void) { return AV_NOPTS_VALUE; }
static inline AVRational lr_time_base_q(void) { return AV_TIME_BASE_Q; }

/// Formats one av_log line into `buf` the way FFmpeg's default callback would.
/// Swift cannot touch a va_list portably, so the log bridge calls this from its C callback.
typedef void (*lr_log_sink)(int level, const char *line);
static lr_log_sink lr_current_log_sink = 0;
static inline void lr_log_callback(void *avcl, int level, const char *fmt, va_list vl) {
    // Every thread that logs (ingest, decode, muxers) comes through here: the sink is read
    // atomically, and whether the next line needs a prefix is each thread's own (a line that
    // one thread left unfinished says nothing about another thread's line).
    lr_log_sink sink = __atomic_load_n(&lr_current_log_sink, __ATOMIC_ACQUIRE);
    if (level > av_log_get_level() || sink == 0) return;
    char line[1024];
    static _Thread_local int print_prefix = 1;
    av_log_format_line(avcl, level, fmt, vl, line, sizeof(line), &print_prefix);
    sink(level, line);
}
static inline void lr_install_log_sink(lr_log_sink sink) {
    __atomic_store_n(&lr_current_log_sink, sink, __ATOMIC_RELEASE);
    av_log_set_callback(sink ? lr_log_callback : av_log_default_callback);
}

#endif
