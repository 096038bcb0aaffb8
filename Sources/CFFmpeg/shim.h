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
#include <libavutil/md5.h>
#include <libswscale/swscale.h>
#include <libswresample/swresample.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/channel_layout.h>
#include <errno.h>
#include <stdio.h>
#include <stdarg.h>
#include <string.h>
#include <malloc.h>

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
static inline AVChannelLayout lr_stereo_layout(void) { AVChannelLayout l = AV_CHANNEL_LAYOUT_STEREO; return l; }

/// Formats one av_log line into `buf` the way FFmpeg's default callback would.
/// Swift cannot touch a va_list portably, so the log bridge calls this from its C callback.
typedef void (*lr_log_sink)(int level, const char *line);
static lr_log_sink lr_current_log_sink = 0;
// Signs of lost media that FFmpeg only logs, counted before the level filter (they count
// even when the log is quiet). Only MediaCore's FFmpegLog.swift may touch these: each Swift
// object file that uses a static of this header gets its own copy of it.
//
// RTP packets lost (rtpdec: "RTP: missed N packets", or a packet dropped as too late), counted
// on the thread that read them: the ingest thread that called av_read_frame.
static _Thread_local long lr_rtp_losses = 0;
// Errors a watched codec context logged (its decoder met damaged data), per slot: slice
// threads log from their own threads, so counts are kept per context, not per thread.
#define LR_WATCH_SLOTS 1024
// (Arrays as function statics: Swift's importer emits a header's static arrays only that way.)
static inline void **lr_watched_slots(void) { static void *slots[LR_WATCH_SLOTS]; return slots; }
static inline long *lr_watched_counts(void) { static long counts[LR_WATCH_SLOTS]; return counts; }
static inline void lr_count_signs(void *avcl, int level, const char *fmt) {
    if (!fmt) return;
    if (fmt[0] == 'R' && strncmp(fmt, "RTP: ", 5) == 0 &&
        (strncmp(fmt + 5, "missed ", 7) == 0 || strncmp(fmt + 5, "dropping old packet", 19) == 0)) {
        lr_rtp_losses++;
        return;
    }
    if (level > AV_LOG_ERROR && strncmp(fmt, "concealing ", 11) != 0) return;
    if (!avcl) return;
    void **lr_watched = lr_watched_slots();
    long *lr_watched_errors = lr_watched_counts();
    for (int i = 0; i < LR_WATCH_SLOTS; i++) {
        if (__atomic_load_n(&lr_watched[i], __ATOMIC_ACQUIRE) == avcl) {
            __atomic_add_fetch(&lr_watched_errors[i], 1, __ATOMIC_RELAXED);
            return;
        }
    }
}
/// Starts counting the errors `ctx` logs; returns its slot, or -1 when every slot is taken.
static inline int lr_watch(void *ctx) {
    void **lr_watched = lr_watched_slots();
    long *lr_watched_errors = lr_watched_counts();
    for (int i = 0; i < LR_WATCH_SLOTS; i++) {
        void *expected = 0;
        if (__atomic_compare_exchange_n(&lr_watched[i], &expected, ctx, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            __atomic_store_n(&lr_watched_errors[i], 0, __ATOMIC_RELAXED);
            return i;
        }
    }
    return -1;
}
static inline void lr_unwatch(int slot) {
    if (slot >= 0 && slot < LR_WATCH_SLOTS) __atomic_store_n(&lr_watched_slots()[slot], (void *)0, __ATOMIC_RELEASE);
}
static inline long lr_take_watched_errors(int slot) {
    if (slot < 0 || slot >= LR_WATCH_SLOTS) return 0;
    return __atomic_exchange_n(&lr_watched_counts()[slot], 0, __ATOMIC_RELAXED);
}
static inline long lr_take_rtp_losses(void) { long n = lr_rtp_losses; lr_rtp_losses = 0; return n; }

static inline void lr_log_callback(void *avcl, int level, const char *fmt, va_list vl) {
    lr_count_signs(avcl, level, fmt);
    // Every thread that logs (ingest, decode, muxers) comes through here: the sink is read
    // atomically, and whether the next line needs a prefix is each thread's own (a line that
    // one thread left unfinished says nothing about another thread's line).
    lr_log_sink sink = __atomic_load_n(&lr_current_log_sink, __ATOMIC_ACQUIRE);
    if (sink == 0) { av_log_default_callback(avcl, level, fmt, vl); return; }
    if (level > av_log_get_level()) return;
    char line[1024];
    static _Thread_local int print_prefix = 1;
    av_log_format_line(avcl, level, fmt, vl, line, sizeof(line), &print_prefix);
    sink(level, line);
}
static inline void lr_install_log_sink(lr_log_sink sink) {
    // The callback stays ours without a sink too (FFmpeg's default printing, plus the counts).
    __atomic_store_n(&lr_current_log_sink, sink, __ATOMIC_RELEASE);
    av_log_set_callback(lr_log_callback);
}

#endif
