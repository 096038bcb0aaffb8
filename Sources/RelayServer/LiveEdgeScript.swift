/// How LiveRelay's pages keep hls.js at the live edge, in one copy: the watch page has it inline,
/// and `/assets/live-edge.js` serves it to pages elsewhere (the bench's and the tests' hls.js
/// page, `scripts/hlsjs_page.py`, loads it from the server it measures, for every player it runs).
///
/// 0.1 s more target latency per stall (hls.js adds 1 s), and back to the target when behind it:
/// hls.js's own catch-up needs more than 1 s buffered, which a hold-back under a second never has.
/// `window.liveEdgeTicks` counts its checks (the tests read it: the script ran, not only loaded).
enum LiveEdgeScript {
    static let source = """
        window.liveRelayKeepLive = function (hls, v) {
          hls.config.liveSyncOnStallIncrease = 0.1;
          return setInterval(() => {
            window.liveEdgeTicks = (window.liveEdgeTicks || 0) + 1;
            // Live only, and only while the playlist is fresh (a publisher gone leaves it be).
            const d = hls.latestLevelDetails;
            if (!d || !d.live || d.age > 3 * (d.partTarget || d.targetduration)) return;
            const behind = hls.latency - hls.targetLatency;
            const ahead = v.buffered.length ? v.buffered.end(v.buffered.length - 1) - v.currentTime : 0;
            // A second or more behind (a start far from the edge): jump to it.
            if (hls.targetLatency && behind > 1 && !v.seeking && hls.liveSyncPosition - v.currentTime > 1) { v.currentTime = hls.liveSyncPosition; return; }
            const rate = hls.targetLatency && behind > 0.05 && ahead > 0.1 ? Math.min(1.25, 1 + behind) : 1;
            if (v.playbackRate !== rate) v.playbackRate = rate;
          }, 250);
        };
        """
}
