/// The single view's timeline under the picture (`/?only=NAME`): the stream's recorded spans
/// (`GET /api/recordings`, `playback`), a click plays from there (hls.js over
/// `recording.m3u8`), "live" returns, `&at=TIME` opens playing from TIME. It runs after the
/// wall's script and uses its `wall`, `only`, `params`, `esc` and `sendWatch`.
enum WallTimeline {
    static let javascript = #"""
    // The single view's timeline: the recorded spans under the picture (GET /api/recordings,
    // `playback`), a click plays from there (hls.js over recording.m3u8), "live" returns.
    // `?at=TIME` opens playing from TIME (a link to a moment).
    async function timeline() {
      const el = document.querySelector(`[data-timeline="${esc(only)}"]`);
      if (!el) return;
      const bar = el.querySelector('[data-bar]'), video = el.querySelector('[data-playback]'), live = el.querySelector('[data-live]');
      const range = el.querySelector('[data-range]'), at = el.querySelector('[data-at]'), count = el.querySelector('[data-spans]');
      const canvas = wall.tiles[only].canvas;
      const token = params.get('token'), q = token ? '&token=' + encodeURIComponent(token) : '';
      const name = encodeURIComponent(only);
      let hls = null, view = null, from = null;
      async function load() {
        const end = Date.now(), start = end - range.value * 1000;
        let r;
        try { r = await fetch(`/api/recordings/${name}?start=${new Date(start).toISOString()}&end=${new Date(end).toISOString()}${q}`); } catch (e) { return; }
        if (!r.ok) { el.hidden = !hls; return; }
        const v = await r.json();
        el.hidden = false;
        view = {start, end, spans: v.spans};
        wall.timeline = view;
        bar.replaceChildren();
        for (const s of v.spans) {
          const a = Math.max(start, Date.parse(s.start)), b = Math.min(end, Date.parse(s.end));
          if (b <= a) continue;
          const d = document.createElement('div');
          d.className = 'span';
          d.style.left = ((a - start) / (end - start) * 100) + '%';
          d.style.width = ((b - a) / (end - start) * 100) + '%';
          d.title = `${new Date(a).toLocaleString()} – ${new Date(b).toLocaleTimeString()}`;
          bar.append(d);
        }
        const head = document.createElement('div');
        head.className = 'head';
        bar.append(head);
        count.textContent = `${v.spans.length} recorded spans`;
        drawHead();
      }
      function drawHead() {
        const head = bar.querySelector('.head');
        if (!head || !view) return;
        const t = hls && hls.playingDate ? +hls.playingDate : (hls ? from : view.end);
        head.style.left = Math.max(0, Math.min(100, (t - view.start) / (view.end - view.start) * 100)) + '%';
        if (hls && hls.playingDate) at.textContent = 'playing ' + hls.playingDate.toLocaleString();
      }
      async function play(t) {
        const { t: attach } = await import('/assets/hls.mjs');
        if (hls) hls.destroy();
        from = +t;
        const end = new Date(Math.min(Date.now(), from + 3600e3));
        const src = `/streams/${name}/recording.m3u8?start=${new Date(from).toISOString()}&end=${end.toISOString()}${q}`;
        wall.paused = true; sendWatch();
        canvas.hidden = true; video.hidden = false; live.disabled = false;
        at.textContent = 'playing from ' + new Date(from).toLocaleString();
        hls = wall.playback = attach(video, src, () => video.play());
      }
      function goLive() {
        if (hls) { hls.destroy(); hls = wall.playback = null; }
        video.hidden = true; canvas.hidden = false; live.disabled = true; at.textContent = 'live';
        wall.paused = false; sendWatch();
      }
      bar.addEventListener('click', e => {
        if (!view) return;
        const r = bar.getBoundingClientRect();
        play(new Date(view.start + (e.clientX - r.left) / r.width * (view.end - view.start)));
      });
      live.addEventListener('click', goLive);
      range.addEventListener('change', load);
      wall.playFrom = play;
      await load();
      setInterval(load, 10000);
      setInterval(drawHead, 500);
      if (params.get('at')) { const t = Date.parse(params.get('at')); if (!isNaN(t)) play(new Date(t)); }
    }
    if (only && wall.tiles[only]) timeline();
    """#
}
