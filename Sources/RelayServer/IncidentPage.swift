/// An incident reviewed in step (`/incidents/{id}`): every camera of the incident played from
/// its recordings in one grid under one clock. hls.js plays each camera's
/// `recording.m3u8` over the incident's range; the page maps the shared wall-clock time to each
/// camera's media time through the playlist's program date-times, so gaps cost no time and a
/// camera with nothing recorded at that moment shows "no recording" (its picture hidden, not
/// frozen).
///
/// The clock: play, pause, seek anywhere on the timeline (click or drag; ← → five seconds),
/// speeds 0.25× to 16×, one frame forward and back (`.` and `,`), space to play or pause. It
/// holds while a camera that has a picture at that moment is still seeking or buffering (up to
/// 3 s; then that camera is left to catch up), and each camera leans its playback rate towards
/// the clock and seeks when it is further off than it can lean. The timeline shows each
/// camera's recorded spans (its gaps) and the incident's bookmarks.
///
/// `window.review` holds the clock and the cameras for tests and the bench; `review.stamps()`
/// reads the stamp of LiveRelay's test source off every tile at one moment. The page's data
/// come from the API with the viewer's own credentials (`playback` on every camera).
enum IncidentPage {
    static func render(id: Int) -> String {
        """
        <!doctype html><html><head><meta charset="utf-8"><title>LiveRelay · incident \(id)</title>
        <meta name="viewport" content="width=device-width">
        <style>
        body{font-family:sans-serif;background:#111;color:#eee;margin:8px} a{color:#8af} button,select{font:inherit}
        h1{font-size:18px;margin:4px 0} #notes{color:#aaa;font-size:13px;white-space:pre-wrap}
        #grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(320px,1fr));gap:8px;margin:8px 0}
        figure{margin:0;background:#1b1b1b;padding:4px;position:relative} video{width:100%;aspect-ratio:16/9;background:#000;display:block}
        figcaption{font-size:13px;padding:2px} .norec{display:none;position:absolute;left:4px;right:4px;top:4px;aspect-ratio:16/9;
        align-items:center;justify-content:center;background:#000;color:#aaa;font-size:15px}
        figure.gap .norec{display:flex} figure.gap video{visibility:hidden} figure.waiting figcaption{color:#fb4}
        figure.loading video{visibility:hidden} figure.loading figcaption::after{content:' · loading…'}
        #controls{display:flex;gap:8px;align-items:center;font-size:14px;flex-wrap:wrap} #clock{font-variant-numeric:tabular-nums;min-width:15em}
        #timeline{position:relative;background:#222;margin:6px 0;cursor:pointer;user-select:none}
        .row{position:relative;height:12px;margin:2px 0;background:#2a2a2a} .row .span{position:absolute;top:0;bottom:0;background:#3a7;min-width:1px}
        .row .label{position:absolute;left:2px;top:-1px;font-size:10px;color:#ddd;pointer-events:none}
        .mark{position:absolute;top:0;bottom:0;width:3px;background:#fd4} #head{position:absolute;top:0;bottom:0;width:2px;background:#f44;pointer-events:none}
        #ticks{display:flex;justify-content:space-between;font-size:11px;color:#aaa}
        </style></head><body>
        <h1 id="title">incident \(id)</h1><div id="notes"></div>
        <div id="controls"><button id="play" title="space">play</button>
        <button id="back" title=",">‹ frame</button><button id="fwd" title=".">frame ›</button>
        speed <select id="rate">\(["0.25", "0.5", "1", "2", "4", "8", "16"].map { "<option value=\"\($0)\"\($0 == "1" ? " selected" : "")>\($0)×</option>" }.joined())</select>
        <span id="clock"></span> <a id="export" href="#">export evidence bundle</a> <small id="status">loading…</small></div>
        <div id="timeline" title="click or drag to seek"><div id="rows"></div><div id="head"></div></div><div id="ticks"></div>
        <div id="grid"></div>
        <small>keys: space play/pause · , . one frame · ← → 5 s · [ ] speed</small>
        <script>
        \(PageStamp.javascript)
        \(script)
        </script></body></html>
        """
    }

    static let script = #"""
    const params = new URLSearchParams(location.search);
    const token = params.get('token'), auth = token ? {Authorization: 'Bearer ' + token} : {};
    const tq = token ? '&token=' + encodeURIComponent(token) : '';
    const id = location.pathname.split('/').filter(Boolean).pop();
    const $ = s => document.getElementById(s);
    const review = window.review = {cams: [], start: 0, end: 0, playing: false, rate: 1, anchorWall: 0, anchorPerf: 0,
                                    frameMs: 1000 / 30, bookmarks: [], ready: false, error: null, lastSeek: null, held: false, freeRun: false};
    const iso = t => new Date(t).toISOString();
    // Resolves with how many cameras' recordings loaded, once each has loaded or failed.
    let loaded;
    review.loaded = new Promise(resolve => { loaded = resolve; });

    // --- the clock: wall-clock milliseconds of the incident's time.
    function now() { return review.playing ? review.anchorWall + (performance.now() - review.anchorPerf) * review.rate : review.anchorWall; }
    function anchor(t) { review.anchorWall = Math.max(review.start, Math.min(review.end, t)); review.anchorPerf = performance.now(); }
    review.now = now;

    // --- a camera's media time at wall time T (null: nothing recorded then).
    function fragments(cam) { const d = cam.hls && cam.hls.levels && cam.hls.levels[0] && cam.hls.levels[0].details; return d ? d.fragments : null; }
    function mediaAt(cam, T) {
      const f = fragments(cam); if (!f || !f.length) return null;
      let lo = 0, hi = f.length - 1, k = -1;
      while (lo <= hi) { const m = (lo + hi) >> 1; if (f[m].programDateTime <= T) { k = m; lo = m + 1; } else hi = m - 1; }
      if (k < 0) return null;
      const off = T - f[k].programDateTime;
      return off <= f[k].duration * 1000 ? f[k].start + off / 1000 : null;
    }

    // --- steering: every camera follows the clock.
    function steer(cam, T) {
      // Still loading its playlist: neither a picture nor a gap yet.
      const loading = !!cam.hls && !fragments(cam);
      cam.fig.classList.toggle('loading', loading);
      if (loading) return;
      const v = cam.video, m = cam.hls ? mediaAt(cam, T) : null;
      const gap = m === null;
      if (gap !== cam.gap) { cam.gap = gap; cam.fig.classList.toggle('gap', gap); }
      if (gap) { if (!v.paused) v.pause(); return; }
      if (v.readyState < 1 || v.seeking) return;
      const err = v.currentTime - m;
      if (!review.playing) {
        if (!v.paused) v.pause();
        if (Math.abs(err) > 0.001) v.currentTime = m;
        return;
      }
      const rate = review.rate;
      if (Math.abs(err) > Math.max(0.25, 0.1 * rate)) {
        v.currentTime = m;
        v.playbackRate = rate; cam.lean = 0;
        if (v.paused) v.play().catch(() => {});
        return;
      }
      // In place (after a hold, or at play): go on from there without a seek.
      if (v.paused) { v.playbackRate = rate; cam.lean = 0; v.play().catch(() => {}); return; }
      // Lean towards the clock: more than 6 ms of media off per 1× of rate, play up to half
      // again faster or slower (50 ms ahead: 10 % slower) until within 1 ms per 1×, then at
      // the clock's rate again, so that a camera in step keeps one rate (BENCHMARKS.md has the
      // alternatives measured).
      if (cam.lean && (Math.abs(err) < 0.001 * rate || Math.sign(err) !== cam.lean)) { cam.lean = 0; v.playbackRate = rate; }
      else if (!cam.lean && Math.abs(err) > 0.006 * rate) {
        cam.lean = Math.sign(err);
        v.playbackRate = Math.max(0.0625, rate * 0.5, Math.min(16, rate * 1.5, rate - err * 2 * Math.max(1, rate / 4)));
      } else if (!cam.lean && v.playbackRate !== rate) v.playbackRate = rate;
    }
    // A camera with a picture at this moment that is still seeking or buffering holds the clock
    // (up to 3 s: then it is left to catch up).
    function waiting(cam) {
      const w = !!cam.hls && (!fragments(cam) || !cam.gap && (cam.video.seeking || cam.video.readyState < 3));
      cam.fig.classList.toggle('waiting', !!w);
      if (!w) { cam.waitSince = null; return false; }
      if (cam.waitSince === null) cam.waitSince = performance.now();
      return performance.now() - cam.waitSince < 3000;
    }
    function tick() {
      requestAnimationFrame(tick);
      const hold = review.playing && !review.freeRun && review.cams.map(waiting).some(Boolean);
      // Held: the clock stands where it stood until every camera can go on together.
      if (hold && review.held) review.anchorPerf = performance.now();
      let T = now();
      if (review.playing && T >= review.end) { pause(); T = review.end; }
      if (review.freeRun) {
        // The bench's baseline: every camera plays on its own, as separate players would.
      } else if (hold) {
        if (!review.held) { anchor(T); review.held = true; }
        for (const cam of review.cams) if (!cam.video.paused) cam.video.pause();
      } else {
        review.held = false;
        for (const cam of review.cams) steer(cam, T);
      }
      drawClock(T);
    }

    function play() {
      if (now() >= review.end) anchor(review.start);
      anchor(now()); review.playing = true; $('play').textContent = 'pause';
    }
    function pause() { anchor(now()); review.playing = false; $('play').textContent = 'play'; }
    function setRate(r) {
      anchor(now()); review.rate = r; $('rate').value = String(r);
      for (const cam of review.cams) cam.lean = 0;
    }
    // A seek: every camera with a picture at T reports its first picture there.
    function seek(T) {
      anchor(T);
      review.lastSeek = {at: performance.now(), wall: review.anchorWall, pictures: {}};
      for (const cam of review.cams) {
        cam.seekPending = true;
        steer(cam, review.anchorWall);
        // Already in place, or nothing to show there: no picture is coming.
        if (!cam.video.seeking && fragments(cam)) { cam.seekPending = false; if (!cam.gap) review.lastSeek.pictures[cam.name] = 0; }
      }
    }
    function step(n) { pause(); seek(now() + n * review.frameMs); }
    Object.assign(review, {play, pause, seek, step, setRate});

    // What each tile shows now, read off its pixels: the stamp's capture time (null: no stamp).
    review.stamps = () => {
      const out = {clock: now(), tiles: {}};
      for (const cam of review.cams) {
        const v = cam.video;
        out.tiles[cam.name] = cam.gap || !v.videoWidth ? null : (readStamp(v, v.videoWidth, v.videoHeight) || {capture: null}).capture;
      }
      return out;
    };
    // For the bench and tests: seek, and resolve once every camera with a picture there has
    // painted one (or after `timeout` ms): {ms: per camera, all: the slowest}.
    review.seekAndWait = (T, timeout = 5000) => new Promise(resolve => {
      seek(T);
      const s = review.lastSeek;
      const check = () => {
        const want = review.cams.filter(c => !c.gap && c.hls);
        const done = want.every(c => s.pictures[c.name] !== undefined);
        if (done || performance.now() - s.at > timeout) {
          const ms = want.map(c => s.pictures[c.name]).filter(x => x !== undefined);
          resolve({ms: s.pictures, all: done && ms.length ? Math.max(...ms) : null});
        } else setTimeout(check, 5);
      };
      check();
    });
    // Samples of review.stamps() every animation frame for `ms` milliseconds.
    review.sample = (ms) => new Promise(resolve => {
      const out = [], until = performance.now() + ms;
      const f = () => { out.push(review.stamps()); if (performance.now() < until) requestAnimationFrame(f); else resolve(out); };
      requestAnimationFrame(f);
    });

    // --- the timeline: a row of recorded spans per camera, the bookmarks, the clock's head.
    function fraction(T) { return (T - review.start) / (review.end - review.start); }
    function drawClock(T) {
      $('head').style.left = Math.max(0, Math.min(100, fraction(T) * 100)) + '%';
      const text = new Date(T).toISOString().replace('T', ' ').slice(0, 23) + ' · ' + review.rate + '×';
      if ($('clock').textContent !== text) $('clock').textContent = text;
    }
    function drawTimeline() {
      const rows = $('rows'); rows.replaceChildren();
      for (const cam of review.cams) {
        const row = document.createElement('div'); row.className = 'row';
        for (const s of cam.spans) {
          const a = Math.max(review.start, Date.parse(s.start)), b = Math.min(review.end, Date.parse(s.end));
          if (b <= a) continue;
          const d = document.createElement('div'); d.className = 'span';
          d.style.left = fraction(a) * 100 + '%'; d.style.width = (b - a) / (review.end - review.start) * 100 + '%';
          row.append(d);
        }
        const l = document.createElement('span'); l.className = 'label'; l.textContent = cam.name; row.append(l);
        rows.append(row);
      }
      for (const b of review.bookmarks) {
        const t = Date.parse(b.time);
        if (t < review.start || t > review.end) continue;
        const m = document.createElement('div'); m.className = 'mark'; m.style.left = fraction(t) * 100 + '%';
        m.title = `${b.stream} · ${new Date(t).toISOString().slice(11, 23)} · ${b.who}: ${b.note}`;
        m.dataset.time = String(t);
        $('timeline').append(m);
      }
      $('ticks').replaceChildren(...[0, 0.25, 0.5, 0.75, 1].map(f => {
        const s = document.createElement('span'); s.textContent = new Date(review.start + f * (review.end - review.start)).toISOString().slice(11, 19); return s;
      }));
    }
    let dragging = false;
    function seekAtPointer(e) {
      const r = $('timeline').getBoundingClientRect();
      const mark = e.target.dataset && e.target.dataset.time;
      seek(mark ? Number(mark) : review.start + Math.max(0, Math.min(1, (e.clientX - r.left) / r.width)) * (review.end - review.start));
    }
    $('timeline').addEventListener('pointerdown', e => { dragging = true; seekAtPointer(e); });
    addEventListener('pointermove', e => { if (dragging) seekAtPointer(e); });
    addEventListener('pointerup', () => { dragging = false; });
    $('play').addEventListener('click', () => review.playing ? pause() : play());
    $('back').addEventListener('click', () => step(-1));
    $('fwd').addEventListener('click', () => step(1));
    $('rate').addEventListener('change', e => setRate(Number(e.target.value)));
    const rates = [0.25, 0.5, 1, 2, 4, 8, 16];
    addEventListener('keydown', e => {
      if (e.target.tagName === 'SELECT') return;
      if (e.key === ' ') { e.preventDefault(); review.playing ? pause() : play(); }
      else if (e.key === ',') step(-1);
      else if (e.key === '.') step(1);
      else if (e.key === 'ArrowLeft') seek(now() - 5000);
      else if (e.key === 'ArrowRight') seek(now() + 5000);
      else if (e.key === '[' || e.key === ']') {
        const i = rates.indexOf(review.rate) + (e.key === ']' ? 1 : -1);
        if (i >= 0 && i < rates.length) setRate(rates[i]);
      }
    });

    // --- the cameras.
    function camera(name, spans, attach) {
      const fig = document.createElement('figure');
      fig.dataset.tile = name;
      const video = document.createElement('video');
      video.muted = true; video.playsInline = true; video.preload = 'auto';
      const norec = document.createElement('div'); norec.className = 'norec'; norec.textContent = 'no recording';
      const cap = document.createElement('figcaption'); cap.textContent = name;
      fig.append(video, norec, cap);
      $('grid').append(fig);
      const cam = {name, fig, video, spans, hls: null, gap: null, waitSince: null, seekPending: false, intervals: [], frame: 0, lean: 0};
      if (spans.length && attach) {
        const src = `/streams/${encodeURIComponent(name)}/recording.m3u8?start=${iso(review.start)}&end=${iso(review.end)}${tq}`;
        cam.hls = attach(video, src);
        // A recording is not live: buffer ahead enough for 16× and keep half a minute behind
        // for stepping back, no more (an hour of sixteen cameras stays out of memory).
        Object.assign(cam.hls.config, {maxBufferLength: 20, maxMaxBufferLength: 40, backBufferLength: 30, frontBufferFlushThreshold: 60,
                                       lowLatencyMode: false});
        // A recording that cannot play: its tile says why, as it would a gap.
        cam.hls.on('hlsError', (_, d) => {
          if (!d.fatal) return;
          cap.textContent = `${name} · ${d.details}`; norec.textContent = 'cannot play: ' + d.details;
          cam.hls.destroy(); cam.hls = null;
        });
      }
      // Each picture painted: the first after a seek (for its time), and the camera's frame
      // interval from its last 31 pictures played at 1× or slower (for a frame step; 30 fps
      // until then).
      let last = null;
      const onFrame = (_, md) => {
        const s = review.lastSeek;
        // The first picture after a seek is no interval from the one before.
        if (s && cam.seekPending && !video.seeking) { cam.seekPending = false; s.pictures[name] = Math.round(performance.now() - s.at); last = null; }
        if (last !== null && review.rate <= 1 && md.mediaTime > last && md.mediaTime - last < 0.5) {
          cam.intervals.push((md.mediaTime - last) * 1000); if (cam.intervals.length > 31) cam.intervals.shift();
          // At 1× or slower a screen shows every picture: the frame is the usual interval.
          cam.frame = [...cam.intervals].sort((a, b) => a - b)[cam.intervals.length >> 1];
          review.frameMs = Math.min(...review.cams.map(c => c.frame || Infinity));
        }
        last = md.mediaTime;
        video.requestVideoFrameCallback(onFrame);
      };
      if (video.requestVideoFrameCallback) video.requestVideoFrameCallback(onFrame);
      return cam;
    }

    async function load() {
      let r;
      try { r = await fetch('/api/incidents/' + encodeURIComponent(id), {headers: auth}); } catch (e) { r = null; }
      if (!r || !r.ok) {
        const why = r ? ((await r.json().catch(() => ({}))).error || r.status) : 'no answer';
        review.error = String(why); $('status').textContent = 'cannot open incident ' + id + ': ' + why; loaded(0); return;
      }
      const view = await r.json(), inc = view.incident;
      review.incident = inc; review.bookmarks = view.bookmarks;
      review.start = Date.parse(inc.start); review.end = Date.parse(inc.end);
      document.title = 'LiveRelay · ' + inc.title;
      $('title').textContent = `${inc.title} · ${inc.state} · ${iso(review.start)} – ${iso(review.end)}`;
      $('notes').textContent = inc.notes;
      $('export').href = `/api/incidents/${encodeURIComponent(id)}/export${token ? '?token=' + encodeURIComponent(token) : ''}`;
      let attach = null;
      try { attach = (await import('/assets/hls.mjs')).t; } catch (e) { $('status').textContent = 'no hls.js on this node: recordings cannot play here'; }
      const spans = await Promise.all(inc.streams.map(async name => {
        try {
          const s = await fetch(`/api/recordings/${encodeURIComponent(name)}?start=${iso(review.start)}&end=${iso(review.end)}`, {headers: auth});
          return s.ok ? (await s.json()).spans : [];
        } catch (e) { return []; }
      }));
      review.cams = inc.streams.map((name, i) => camera(name, spans[i], attach));
      drawTimeline();
      const at = Date.parse(params.get('at') || '');
      seek(isNaN(at) ? review.start : at);
      review.ready = true;
      // Every camera's playlist loaded (or failed): its recording placed, its gaps known.
      const until = performance.now() + 15000;
      const check = () => review.cams.every(c => !c.hls || fragments(c)) || performance.now() > until
        ? loaded(review.cams.filter(c => c.hls && fragments(c)).length) : setTimeout(check, 50);
      check();
      if (attach) $('status').textContent = `${inc.streams.length} cameras · ${view.bookmarks.length} bookmarks`;
      requestAnimationFrame(tick);
    }
    load();
    """#
}
