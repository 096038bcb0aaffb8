import Relay

/// The ops wall (`/`): every readable stream as a tile, all over one WebSocket (`/api/wall`).
/// H.264 tiles are decoded by the page (WebCodecs) from the packets the server already has;
/// other tiles show the preview's JPEGs. Each tile shows its path, state, frames per second,
/// drops and latency (capture → screen where the picture carries a stamp, else arrival →
/// screen, labelled). A lost source turns its tile into the slate. Only visible tiles of a
/// visible page are sent. Every tile's canvas carries `data-stream`; `window.wall` holds the
/// tiles' counters for tests and the bench. `?only=NAME` shows one stream, full size, with the
/// timeline of its recordings under it (click to play back, "live" to return; `&at=TIME`).
enum WallPage {
    /// - Parameter admin: whether the client may steer a stream's outputs (the single view then
    ///   offers their policy switches).
    static func render(engine: RelayEngine, visible: (String) -> Bool = { _ in true }, admin: (String) -> Bool = { _ in false }) -> String {
        var cards = ""
        let hubs = engine.hubs
        // A rendition is its stream's, not a tile of its own.
        for (name, hub) in hubs.sorted(by: { $0.key < $1.key }) where visible(name) && engine.settings(name)?.partOf == nil {
            let s = hub.currentStatus
            let n = OpsPage.escape(name)
            cards += """
            <figure data-tile="\(n)" data-group="\(OpsPage.escape(engine.settings(name)?.group ?? ""))"><a href="/?only=\(n)"><canvas data-stream="\(n)" width="640" height="360"></canvas></a>
            <div class="timeline" data-timeline="\(n)" hidden><video id="playback" data-playback muted playsinline controls hidden></video>
            <div class="bar" data-bar title="recorded: click to play from there"></div>
            <div class="dvr"><button data-live disabled>● live</button> last <select data-range><option value="3600">hour</option>
            <option value="21600">6 hours</option><option value="86400">24 hours</option></select> · <span data-spans></span> · <span data-at>live</span></div></div>
            <figcaption><b>\(OpsPage.escape(s.title ?? name))</b> <a data-open href="/?only=\(n)" title="this stream alone, with its recordings">open</a> · <span data-state="\(n)">\(OpsPage.escape(s.state.rawValue))</span>
            <span data-why="\(n)"></span><span data-damage="\(n)"></span><span data-talk="\(n)"></span><br><small data-info="\(n)">connecting…</small>
            <span class="single"> · <a href="/streams/\(n)/watch">public page</a> · freshness
            <select data-policy="\(n)"><option value="max_age">max age 500 ms</option><option value="latest">newest only</option>
            <option value="lossless">lossless</option></select>\(admin(name) ? " · <span data-admin=\"\(n)\"></span>" : "")</span></figcaption></figure>
            """
        }
        return """
        <!doctype html><html><head><meta charset="utf-8"><title>LiveRelay · wall</title>
        <meta name="viewport" content="width=device-width">
        <style>
        body{font-family:sans-serif;background:#111;color:#eee;margin:8px}
        h1{font-size:18px;margin:4px 0} h1 a{color:#8af;font-size:13px;font-weight:normal;margin-left:1em}
        #wall{display:grid;grid-template-columns:repeat(auto-fill,minmax(320px,1fr));gap:8px}
        body.only #wall{display:block} body.only figure:not(.shown){display:none} body.only h1{display:none}
        figure{margin:0;background:#1b1b1b;padding:4px} canvas{width:100%;height:auto;background:#000;display:block}
        figcaption{font-size:13px;padding:2px} small{color:#aaa} .lost canvas{outline:3px solid #c33}
        .damaged canvas{outline:3px solid #d90} [data-damage]{color:#d90} .dropping small{color:#fb4}
        .single{display:none} body.only .single{display:inline} a{color:#8af}
        .timeline{font-size:13px} .bar{position:relative;height:18px;background:#2a2a2a;margin:4px 0;cursor:pointer}
        .bar .span{position:absolute;top:0;bottom:0;background:#3a7;min-width:1px} .bar .head{position:absolute;top:-2px;bottom:-2px;width:2px;background:#fd4}
        video[data-playback]{width:100%;background:#000;display:block} button{font:inherit}
        figure{position:relative}
        \(WallArrange.css)
        </style></head><body><h1>LiveRelay <a href="/previews">MJPEG grid</a> <a href="/api/streams">API</a></h1>
        \(WallArrange.toolbar(groups: Set(hubs.keys.filter(visible).compactMap { engine.settings($0)?.group }).sorted()))
        <div id="wall">\(cards)</div>
        <script>
        \(WallFrame.javascript)
        \(PageStamp.javascript)
        \(script)
        \(WallTimeline.javascript)
        \(WallArrange.javascript)
        \(WallPTZ.javascript)
        \(WallTalk.javascript)
        </script></body></html>
        """
    }

    static let script = #"""
    'use strict';
    const params = new URLSearchParams(location.search);
    const only = params.get('only');
    const measure = params.get('measure');
    if (only) document.body.classList.add('only');
    const wall = window.wall = {tiles: {}, socket: null, decoders: [], connected: false};
    const esc = s => CSS.escape(s);
    for (const fig of document.querySelectorAll('figure[data-tile]')) {
      const name = fig.dataset.tile;
      if (only && name !== only) continue;
      if (only) fig.classList.add('shown');
      const canvas = fig.querySelector('canvas');
      wall.tiles[name] = {name, fig, canvas, g: canvas.getContext('2d'), path: null, why: '', visible: !!only,
        frames: 0, painted: 0, changes: 0, lastHash: null, fps: 0, fpsFrames: 0, lastPaint: 0, lastPaintWall: 0,
        state: fig.querySelector('[data-state]').textContent, lostSince: null, decoder: null, codec: null,
        stamped: null, stampTries: 0, latency: [], latencyKind: null, arrivals: new Map(), waitKey: true,
        dropped: 0, serverDropped: 0, sent: 0, bytes: 0, stampLog: [],
        // Where its pictures wait on this page (ms, the last 300 of each) and how often it fell behind.
        waits: {receive: [], decode: []}, floorCur: Infinity, floorPrev: Infinity, floorSince: 0,
        behind: 0, behindAt: -1e9, behindWhere: '', behindSent: 0};
    }
    const tileBySlot = [];

    function hashCanvas(t) {
      const d = t.g.getImageData(0, t.canvas.height >> 1, t.canvas.width, 1).data;
      let h = 0; for (let i = 0; i < d.length; i += 7) h = (h * 31 + d[i]) >>> 0; return h;
    }

    function painted(t, src, w, h, arrivalMs, senderClock) {
      // Paint at the size the tile is shown (not larger than the picture): a wall of small
      // tiles converts and scales far fewer pixels.
      const shown = t.canvas.clientWidth * (window.devicePixelRatio || 1);
      const cw = Math.max(16, Math.min(w, Math.round(shown) || w)), ch = Math.max(9, Math.round(h * cw / w));
      if (t.canvas.width !== cw || t.canvas.height !== ch) { t.canvas.width = cw; t.canvas.height = ch; }
      t.g.drawImage(src, 0, 0, cw, ch);
      const now = Date.now();
      t.painted++; t.fpsFrames++; t.lastPaint = performance.now(); t.lastPaintWall = now; t.awaitingFirst = false;
      // The picture's own time (capture where the camera says it, else arrival): what b marks.
      t.shownAt = arrivalMs || now;
      if (t.painted % 5 === 1) { const hh = hashCanvas(t); if (hh !== t.lastHash) { t.changes++; t.lastHash = hh; } }
      let latency = null;
      // Reading a stamp costs a read-back of pixels: twice a second per tile is enough for its
      // label; every picture only for the tile being measured (?measure=NAME, the bench).
      if (t.stamped !== false && (t.name === measure || now - (t.stampReadAt || 0) >= 500)) {
        t.stampReadAt = now;
        const stamp = readStamp(src, w, h);
        if (stamp !== null) {
          t.stamped = true; latency = now - stamp.capture; t.latencyKind = 'capture → screen';
          // For the bench: every stamped picture painted, [frame, capture ms, painted ms, width].
          if (t.stampLog.length < 100000) t.stampLog.push([stamp.frame, stamp.capture, now, w]);
        } else {
          // The measured tile: a picture painted without its stamp (a blank or broken one).
          if (t.name === measure && t.stamped) t.unstamped = (t.unstamped || 0) + 1;
          if (!t.stamped && ++t.stampTries > 30) t.stamped = false;
        }
      }
      // Without a stamp: capture → screen on the sender's clock (RTSP sender reports), else
      // arrival at LiveRelay → screen; each labelled.
      if (latency === null && arrivalMs && t.stamped !== true) {
        const kind = senderClock ? 'capture → screen (sender clock)' : 'arrival → screen';
        if (kind !== t.latencyKind) t.latency = [];
        latency = now - arrivalMs; t.latencyKind = kind;
      }
      if (latency !== null) { t.latency.push(latency); if (t.latency.length > 120) t.latency.shift(); }
      if (t.lostSince && t.state === 'live') setLost(t, null);
    }

    function slate(t, text) {
      const g = t.g, w = t.canvas.width, h = t.canvas.height;
      g.fillStyle = '#202020'; g.fillRect(0, 0, w, h);
      g.fillStyle = '#e44'; g.font = `bold ${Math.max(14, h / 10 | 0)}px sans-serif`; g.textAlign = 'center';
      g.fillText('SIGNAL LOST', w / 2, h / 2);
      g.fillStyle = '#ccc'; g.font = `${Math.max(11, h / 18 | 0)}px sans-serif`;
      g.fillText(text, w / 2, h / 2 + h / 8);
    }

    function setLost(t, since) {
      t.lostSince = since;
      t.fig.classList.toggle('lost', !!since);
      t.fig.dataset.signal = since ? 'lost' : 'ok';
      if (since) {
        const at = new Date(since).toLocaleTimeString([], {hour12: false});
        slate(t, 'since ' + at);
        if (t.decoder && t.decoder.state !== 'closed') { try { t.decoder.close(); } catch (e) {} }
        t.decoder = null; t.waitKey = true;
        t.fig.querySelector('[data-why]').textContent = '· signal lost since ' + at;
      } else {
        t.fig.querySelector('[data-why]').textContent = '';
      }
    }

    function fallback(t, why) {
      if (t.path !== 'h264') return;
      t.path = 'fallback'; t.why = why;
      if (t.decoder && t.decoder.state !== 'closed') { try { t.decoder.close(); } catch (e) {} }
      t.decoder = null;
      send({fallback: t.name});
    }

    // The wall never queues. A picture waits in three places, each bounded: the server's queue
    // for this tile (the viewer's policy, 500 ms by default), the socket (a write that waits
    // 100 ms skips to the next keyframe), and this page: its message queue, when the page cannot
    // keep up with its tiles (a browser reads the socket whatever its script does), and its
    // decoders (whose pictures come out on this same thread). A picture handled here more than
    // PAGE_LATE_MS later than the tile's best of the last 5 to 10 s (the floor: clock offset and
    // transit, whatever the two clocks) means the page fell behind; so does a decoder with more
    // than 3 pictures queued, or a decoded picture that comes out late (not painted, unless the
    // tile has painted nothing for 500 ms). The tile then skips to the
    // next keyframe that is not late itself (or to any, once it has shown nothing for 500 ms),
    // says it is dropping, and asks the server to skip its queue too (counted `page_behind`).
    const PAGE_LATE_MS = 350;
    function lateness(t, arrivalMs) {
      const now = Date.now(), age = now - arrivalMs;
      if (now - t.floorSince > 5000) { t.floorPrev = t.floorCur; t.floorCur = Infinity; t.floorSince = now; }
      t.floorCur = Math.min(t.floorCur, age);
      return Math.max(0, age - Math.min(t.floorCur, t.floorPrev));
    }
    function noteWait(list, ms) { list.push(ms); if (list.length > 300) list.shift(); }
    // Closes the tile's decoder with everything it holds; the next keyframe makes a new one.
    function dropDecoder(t) {
      if (t.decoder && t.decoder.state !== 'closed') { try { t.decoder.close(); } catch (e) {} }
      t.decoder = null; t.arrivals.clear();
    }
    function fellBehind(t, where) {
      const now = performance.now();
      t.waitKey = true; t.behind++; t.behindAt = now; t.behindWhere = where;
      // Its message queue: what the server has queued for it goes too.
      if (where === 'page' && now - t.behindSent > 250) { t.behindSent = now; send({behind: t.name}); }
    }

    function decodeH264(t, flags, ts, codec, payload, arrivalMs) {
      const key = (flags & WF.KEY) !== 0;
      if (!t.decoder || (flags & WF.RESTART) || codec !== t.codec) {
        if (!key) return;
        // Another source (a restart, the sub or main stream) may be stamped on another clock.
        if ((flags & WF.RESTART) || codec !== t.codec) { t.floorCur = t.floorPrev = Infinity; t.floorSince = 0; }
        dropDecoder(t);
        t.codec = codec;
        const decoder = t.decoder = new VideoDecoder({
          output: frame => { const a = t.arrivals.get(frame.timestamp); t.arrivals.delete(frame.timestamp);
                             if (a) noteWait(t.waits.decode, performance.now() - a[2]);
                             // Decoded pictures wait for this (main) thread too: one that comes out
                             // late is not painted (unless the tile has painted nothing for 500 ms
                             // and it is less than 4 times late); twice as late, what the decoder
                             // still holds goes with it.
                             const late = a && a[0] ? lateness(t, a[0]) : 0;
                             if (late > PAGE_LATE_MS && (performance.now() - t.lastPaint < 500 || late > 4 * PAGE_LATE_MS)) {
                               frame.close(); t.dropped++; fellBehind(t, 'decoder');
                               if (late > 2 * PAGE_LATE_MS && t.decoder === decoder) dropDecoder(t);
                               return;
                             }
                             painted(t, frame, frame.displayWidth, frame.displayHeight, a && a[0], a && a[1]); frame.close(); },
          error: e => fallback(t, 'decoder: ' + e.message)});
        try { t.decoder.configure({codec, optimizeForLatency: true}); } catch (e) { fallback(t, 'configure: ' + e.message); return; }
        t.waitKey = false;
      }
      // The page's own freshness (above): a late picture or a full decoder skips to a keyframe.
      const late = arrivalMs ? lateness(t, arrivalMs) : 0;
      noteWait(t.waits.receive, late);
      if (late > PAGE_LATE_MS) fellBehind(t, 'page');
      else if (t.decoder.decodeQueueSize > 3) {
        fellBehind(t, 'decoder');
        // A keyframe while the decoder is behind: a new decoder starts on it, the old backlog goes.
        if (key) { dropDecoder(t); decodeH264(t, flags, ts, codec, payload, arrivalMs); return; }
      }
      if (t.waitKey && !(key && (late <= PAGE_LATE_MS || performance.now() - t.lastPaint > 500))) { t.dropped++; return; }
      t.waitKey = false;
      if (t.arrivals.size > 64) t.arrivals.clear();
      t.arrivals.set(ts, [arrivalMs, (flags & WF.CAPTURE) !== 0, performance.now()]);
      t.frames++;
      try { t.decoder.decode(new EncodedVideoChunk({type: key ? 'key' : 'delta', timestamp: ts, data: payload})); }
      catch (e) { fallback(t, 'decode: ' + e.message); }
    }

    const jpegBusy = new Set();
    function showJPEG(t, flags, payload, arrivalMs) {
      if (flags & WF.SLATE) { if (!t.lostSince) setLost(t, Date.now()); return; }
      if (jpegBusy.has(t.name)) { t.dropped++; return; }     // newest picture only
      jpegBusy.add(t.name);
      t.frames++;
      createImageBitmap(new Blob([payload], {type: 'image/jpeg'})).then(b => {
        jpegBusy.delete(t.name); painted(t, b, b.width, b.height, arrivalMs); b.close();
      }, () => jpegBusy.delete(t.name));
    }

    function onBinary(buf) {
      const v = new DataView(buf);
      const kind = v.getUint8(WF.KIND), flags = v.getUint8(WF.FLAGS), slot = v.getUint16(WF.SLOT);
      const arrivalMs = v.getFloat64(WF.TIME), ts = Number(v.getBigInt64(WF.TIMESTAMP)), clen = v.getUint8(WF.CODEC_LENGTH);
      const codec = new TextDecoder().decode(new Uint8Array(buf, WF.HEADER, clen));
      const payload = new Uint8Array(buf, WF.HEADER + clen);
      const t = tileBySlot[slot];
      if (t) { t.received = (t.received || 0) + 1; t.lastReceived = performance.now(); }
      if (!t || !t.visible) return;
      if (kind === WF.KIND_H264 && t.path === 'h264') decodeH264(t, flags, ts, codec, payload, arrivalMs);
      else if (kind === WF.KIND_JPEG) showJPEG(t, flags, payload, arrivalMs);
      else if (kind === WF.KIND_AUDIO && wall.onAudio) wall.onAudio(t, ts, codec, payload);
    }

    function stateText(t) {
      if (t.state === 'reconnecting') return 'reconnecting' + (t.attempt ? ` (attempt ${t.attempt})` : '');
      return t.state;
    }

    function onText(m) {
      if (m.type === 'hello') {
        for (const s of m.streams) {
          const t = wall.tiles[s.name]; if (!t) continue;
          tileBySlot[s.slot] = t; t.state = s.state; t.attempt = s.attempt;
          if (s.lost_since) setLost(t, s.lost_since);
          t.fig.querySelector('[data-state]').textContent = stateText(t);
        }
        wall.connected = true;
        sendWatch();
      } else if (m.type === 'path') {
        const t = wall.tiles[m.stream]; if (!t) return;
        // A new path starts at a keyframe; the same path on another stream (the sub or main
        // stream, a rendition) restarts the decoder on its first keyframe by itself, and this
        // message may come after that keyframe.
        if (m.path !== t.path) t.waitKey = true;
        t.path = m.path; t.why = m.why;
        t.rendition = m.rendition || '';
        t.switches = (t.switches || 0) + 1; t.switchedAt = performance.now();
        t.fig.dataset.path = m.path;
        t.fig.dataset.rendition = m.rendition || 'source';
      } else if (m.type === 'event') {
        const t = wall.tiles[m.stream]; if (!t) return;
        if (m.kind === 'talk_started' || m.kind === 'talk_ended') { if (wall.talk) wall.talk.event(t, m); return; }
        if (m.kind === 'damaged' || m.kind === 'repaired') {
          // Media lost upstream: pictures are damaged until the next clean keyframe.
          const damaged = m.kind === 'damaged';
          t.fig.classList.toggle('damaged', damaged);
          t.fig.querySelector('[data-damage]').textContent = damaged ? ' · damaged since ' + new Date(m.at).toLocaleTimeString([], {hour12: false}) : '';
          return;
        }
        t.state = m.kind; t.attempt = m.attempt;
        t.fig.querySelector('[data-state]').textContent = stateText(t) + ' ' + new Date(m.at).toLocaleTimeString([], {hour12: false});
        if (m.kind === 'live') setLost(t, null);
        else if (!t.lostSince) setLost(t, t.lastPaintWall || m.at);
      } else if (m.type === 'stats') {
        for (const [name, s] of Object.entries(m.tiles)) {
          const t = wall.tiles[name]; if (!t) continue;
          t.serverDropped = s.dropped; t.sent = s.sent; t.bytes = s.bytes;
          // The server skipped pictures this page had not handled yet: the tile is dropping.
          const skipped = (s.dropped_by_reason || {}).page_behind || 0;
          if (skipped > ((t.serverReasons || {}).page_behind || 0)) { t.behindAt = performance.now(); t.behindWhere = 'page'; }
          t.serverReasons = s.dropped_by_reason || {};
        }
      }
    }

    function send(o) { if (wall.socket && wall.socket.readyState === 1) wall.socket.send(JSON.stringify(o)); }

    // Every 100 ms, how many frames of each tile this page has handled: the server keeps only a
    // few unhandled in flight, so a page whose script is too slow for its tiles gets fewer
    // pictures (the next keyframe) instead of a queue. The timer runs on the same slow thread.
    setInterval(() => {
      const acks = {};
      for (const t of Object.values(wall.tiles)) if (t.received && t.received !== t.acked) { acks[t.name] = t.acked = t.received; }
      if (Object.keys(acks).length) send({acks});
    }, 100);

    // This viewer's own freshness (?freshness=latest|max_age|lossless&depth=N&max_age_ms=N, or
    // the single view's selector): applies to its tiles only, never to the stream's other outputs.
    function policy() {
      const p = {};
      for (const k of ['freshness', 'depth', 'max_age_ms', 'ordering']) if (params.get(k)) p[k] = /^[0-9]+$/.test(params.get(k)) ? +params.get(k) : params.get(k);
      return Object.keys(p).length ? p : null;
    }
    for (const sel of document.querySelectorAll('select[data-policy]')) {
      if (params.get('freshness')) sel.value = params.get('freshness');
      sel.addEventListener('change', () => send({policy: sel.value === 'max_age' ? {freshness: 'max_age', max_age_ms: 500} : {freshness: sel.value}}));
    }

    // Admins, in the single view: each output's freshness, switched for everyone (PATCH).
    for (const el of document.querySelectorAll('[data-admin]')) {
      if (!only || el.dataset.admin !== only) continue;
      fetch('/api/streams/' + encodeURIComponent(only)).then(r => r.json()).then(v => {
        for (const sink of v.sinks.filter(s => s.kind !== 'viewer' && s.kind !== 'decode')) {
          const label = document.createElement('label'); label.textContent = ' ' + sink.name + ' ';
          const sel = document.createElement('select'); sel.dataset.sink = sink.name;
          for (const f of ['latest', 'max_age', 'lossless']) { const o = document.createElement('option'); o.value = o.textContent = f; sel.append(o); }
          sel.value = sink.freshness;
          sel.addEventListener('change', async () => {
            const r = await fetch(`/api/streams/${encodeURIComponent(only)}/sinks/${encodeURIComponent(sink.name)}`,
                                  {method: 'PATCH', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({freshness: sel.value})});
            sel.title = r.ok ? 'applied' : (await r.json()).error || r.statusText;
            if (!r.ok) sel.value = sink.freshness; else sink.freshness = sel.value;
          });
          label.append(sel); el.append(label);
        }
      });
    }

    function sendWatch() {
      const watch = document.hidden || wall.paused ? [] : Object.values(wall.tiles).filter(t => t.visible).map(t => t.name);
      const p = policy();
      // Each tile's height in device pixels: the server picks the smallest rendition that fills it.
      const sizes = {};
      for (const name of watch) { const c = wall.tiles[name].fig.querySelector('canvas'); sizes[name] = Math.round(c.clientHeight * (window.devicePixelRatio || 1)); }
      // The tiles that take the main stream whatever their size: the single view, the selected
      // tile, the tile in full screen (the others may take the camera's sub stream).
      const main = watch.filter(name => name === only || (wall.arrange && wall.arrange.selected === name)
                                        || (document.fullscreenElement && document.fullscreenElement === wall.tiles[name].fig));
      const m = {watch, sizes, main, decoders: wall.decoders};
      if (p) m.policy = p;
      send(m);
    }
    document.addEventListener('fullscreenchange', () => sendWatch());

    // Only what is on screen is sent: tiles scrolled away and background tabs cost nothing.
    const seen = new IntersectionObserver(entries => {
      for (const e of entries) {
        const t = wall.tiles[e.target.dataset.tile]; if (!t) continue;
        const visible = e.isIntersecting || !!only;
        // Shown again (scrolled back, a filter or layout changed): its pictures start at the next
        // keyframe; until the first comes, no picture is not a lost signal.
        if (visible && !t.visible) t.awaitingFirst = true;
        t.visible = visible;
      }
      sendWatch();
    });
    for (const t of Object.values(wall.tiles)) seen.observe(t.fig);
    document.addEventListener('visibilitychange', sendWatch);
    // A tile resized (a layout, full screen): the server may pick another rendition for it.
    let resizeTimer = null;
    const resized = new ResizeObserver(() => { clearTimeout(resizeTimer); resizeTimer = setTimeout(sendWatch, 200); });
    for (const t of Object.values(wall.tiles)) resized.observe(t.fig.querySelector('canvas'));

    // A tile with no picture for 1 s shows the slate, whatever the server knows yet: a frozen
    // last picture with no warning is never shown. A tile that is dropping to keep up while its
    // pictures still arrive says so instead (its caption), and is not lost.
    setInterval(() => {
      const now = performance.now();
      for (const t of Object.values(wall.tiles))
        if (t.visible && !document.hidden && t.painted > 0 && !t.awaitingFirst && !t.lostSince && now - t.lastPaint > 1000
            && !(now - t.behindAt < 2000 && now - (t.lastReceived || 0) < 1000)) setLost(t, t.lastPaintWall);
    }, 100);

    // Every second: fps, drops and latency on each tile.
    setInterval(() => {
      const now = performance.now();
      for (const t of Object.values(wall.tiles)) {
        t.fps = t.fpsFrames; t.fpsFrames = 0;
        const lat = t.latency.slice().sort((a, b) => a - b);
        const p50 = lat.length ? Math.round(lat[lat.length >> 1]) + ' ms ' + t.latencyKind : 'no latency yet';
        const path = t.path === 'h264' ? 'H.264 → WebCodecs' : t.path === 'jpeg' ? 'JPEG' : t.path === 'none' ? 'no picture path' : (t.path || '…');
        // Dropping to keep up: said on the tile for 2 s after the page last fell behind.
        const dropping = now - t.behindAt < 2000;
        t.fig.dataset.dropping = dropping ? t.behindWhere : '';
        t.fig.classList.toggle('dropping', dropping);
        t.fig.querySelector('[data-info]').textContent = `${path}${t.rendition ? ' ' + t.rendition : ''} · ${t.fps} fps · drops ${t.serverDropped + t.dropped}`
          + (dropping ? ` (dropping: the ${t.behindWhere === 'page' ? 'page' : 'decoder'} is behind)` : '') + ` · ${p50}`;
        t.fig.querySelector('[data-info]').title = t.why;
      }
    }, 1000);

    async function connect() {
      wall.decoders = [];
      if (window.isSecureContext && 'VideoDecoder' in window) {
        try { if ((await VideoDecoder.isConfigSupported({codec: 'avc1.42E01E'})).supported) wall.decoders.push('avc1'); } catch (e) {}
      }
      if (params.get('jpeg') !== null) wall.decoders = [];
      const token = params.get('token');
      const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/api/wall' + (token ? '?token=' + encodeURIComponent(token) : '');
      const ws = wall.socket = new WebSocket(url);
      ws.binaryType = 'arraybuffer';
      ws.onmessage = e => typeof e.data === 'string' ? onText(JSON.parse(e.data)) : onBinary(e.data);
      ws.onclose = () => { wall.connected = false; for (const t of Object.values(wall.tiles)) t.received = t.acked = 0; if (wall.onSocketClosed) wall.onSocketClosed(); for (const t of Object.values(wall.tiles)) { if (t.decoder) { try { t.decoder.close(); } catch (e) {} t.decoder = null; } }
                           setTimeout(connect, 1000); };
    }
    connect();
    """#
}
