/// The ops wall arranged by its operator: layouts (an automatic grid, 2×2, 3×3, 4×4, one large
/// and five small), the configuration's groups, a filter by name and by state, full screen for
/// a tile and for the wall, the keyboard (digits select, `f` full screen, `m` sound, `b` bookmark, Esc back; PTZ keys in WallPTZ, talk in WallTalk),
/// and the selected tile's audio (AAC or Opus through WebCodecs' AudioDecoder, no re-encode;
/// muted until asked). Each browser keeps its arrangement (localStorage). `window.wall.arrange`
/// and `window.wall.audio` are there for tests.
enum WallArrange {
    /// The toolbar over the tiles; `groups` are the configuration's, sorted.
    static func toolbar(groups: [String]) -> String {
        let options = groups.map { "<option value=\"\(OpsPage.escape($0))\">\(OpsPage.escape($0))</option>" }.joined()
        return """
        <div id="arrange">layout <select id="layout"><option value="auto">automatic</option><option value="2">2×2</option>
        <option value="3">3×3</option><option value="4">4×4</option><option value="1+5">one large, five small</option></select>
        · group <select id="group"><option value="">all</option>\(options)</select>
        · <input id="filter" type="search" placeholder="filter by name" size="14">
        · state <select id="state"><option value="">any</option><option value="live">live</option><option value="lost">signal lost</option>
        <option value="damaged">damaged</option></select>
        · <button id="fullwall" title="f">full screen</button> · <button id="mute" title="m">sound off</button>
        <span id="selected"></span>\(WallPTZ.toolbar)\(WallTalk.toolbar) <small>keys: 1–9 select · f full screen · m sound · b bookmark · arrows and +/− steer · hold t talk · Esc back</small></div>
        """
    }

    static let css = """
    #arrange{font-size:13px;margin:4px 0 8px} #arrange select,#arrange input{font:inherit;background:#222;color:#eee;border:1px solid #444}
    body.only #arrange{display:none}
    #wall.l2{grid-template-columns:repeat(2,1fr)} #wall.l3{grid-template-columns:repeat(3,1fr)} #wall.l4{grid-template-columns:repeat(4,1fr)}
    #wall.l1\\+5{grid-template-columns:repeat(3,1fr)} #wall.l1\\+5 figure.big{grid-column:span 2;grid-row:span 2}
    figure.filtered{display:none} figure.selected{outline:2px solid #4af} #talkbutton.on{background:#c33;color:#fff}
    figure.lost{box-shadow:0 0 0 3px #c33;animation:lostpulse 1.5s infinite} @keyframes lostpulse{50%{box-shadow:0 0 0 3px #611}}
    figure[data-key]::before{content:attr(data-key);position:absolute;margin:4px;padding:0 5px;background:#000a;font-size:12px}
    figure:fullscreen,#wall:fullscreen{background:#000;padding:0} figure:fullscreen canvas{width:100vw;height:calc(100vh - 40px);object-fit:contain}
    #wall:fullscreen{overflow:auto}
    """

    static let javascript = #"""
    (() => {
      if (only) return;
      const KEY = 'liverelay.wall.v1';
      const arrange = wall.arrange = {layout: 'auto', group: '', filter: '', state: '', selected: null, muted: true, shown: []};
      try { Object.assign(arrange, JSON.parse(localStorage.getItem(KEY) || '{}'), {selected: null, muted: true, shown: []}); } catch (e) {}
      const box = document.getElementById('wall');
      const ui = {layout: document.getElementById('layout'), group: document.getElementById('group'),
                  filter: document.getElementById('filter'), state: document.getElementById('state')};
      const tiles = () => Object.values(wall.tiles);
      function stateOf(t) {
        if (t.lostSince || t.state === 'reconnecting' || t.state === 'stopped') return 'lost';
        if (t.fig.classList.contains('damaged')) return 'damaged';
        return t.state;
      }
      function save() {
        const {layout, group, filter, state} = arrange;
        try { localStorage.setItem(KEY, JSON.stringify({layout, group, filter, state})); } catch (e) {}
      }
      function apply() {
        const limit = {'2': 4, '3': 9, '4': 16, '1+5': 6}[arrange.layout] || Infinity;
        const needle = arrange.filter.trim().toLowerCase();
        const matching = tiles().filter(t =>
          (!arrange.group || t.fig.dataset.group === arrange.group) &&
          (!needle || t.name.toLowerCase().includes(needle) || (t.fig.dataset.title || '').toLowerCase().includes(needle)) &&
          (!arrange.state || stateOf(t) === arrange.state));
        const shown = arrange.shown = matching.slice(0, limit).map(t => t.name);
        for (const t of tiles()) {
          const i = shown.indexOf(t.name);
          t.fig.classList.toggle('filtered', i < 0);
          t.fig.classList.toggle('big', arrange.layout === '1+5' && i === 0);
          if (i >= 0 && i < 9) t.fig.dataset.key = i + 1; else delete t.fig.dataset.key;
        }
        box.className = arrange.layout === 'auto' ? '' : 'l' + arrange.layout;
        for (const [k, el] of Object.entries(ui)) if (el.value !== arrange[k]) el.value = arrange[k];
        if (arrange.selected && !shown.includes(arrange.selected)) select(null);
        save();
      }
      for (const [k, el] of Object.entries(ui)) el.addEventListener(k === 'filter' ? 'input' : 'change', () => { arrange[k] = el.value; apply(); });
      // A tile's state changes which tiles a state filter shows.
      setInterval(() => { if (arrange.state) apply(); }, 1000);

      // --- selection, full screen, sound
      function select(name) {
        arrange.selected = name;
        for (const t of tiles()) t.fig.classList.toggle('selected', t.name === name);
        document.getElementById('selected').textContent = name ? '· selected: ' + name : '';
        listen();
        if (wall.ptz) wall.ptz.select(name);
        if (wall.talk) wall.talk.select(name);
        // The selected tile takes the main stream (the others may play the sub stream).
        sendWatch();
      }
      // b: the selected tile's moment marked (the time of the picture it shows, on the
      // server's clock: its capture time where the camera says it, else its arrival).
      function bookmark() {
        const name = arrange.selected, label = document.getElementById('selected');
        if (!name) { label.textContent = '· select a tile to bookmark it (b)'; return; }
        const t = wall.tiles[name];
        const time = new Date(t.shownAt || Date.now()).toISOString();
        const token = new URLSearchParams(location.search).get('token');
        fetch('/api/bookmarks', {method: 'POST', headers: Object.assign({'Content-Type': 'application/json'}, token ? {Authorization: 'Bearer ' + token} : {}),
                                 body: JSON.stringify({stream: name, time})})
          .then(r => r.json().then(j => ({ok: r.ok, j})))
          .then(({ok, j}) => {
            if (!ok) { label.textContent = '· bookmark refused: ' + (j.error || ''); return; }
            label.textContent = '· selected: ' + name + ' · bookmarked ' + time.slice(11, 23);
          })
          .catch(e => { label.textContent = '· bookmark failed: ' + e; });
      }
      function full(el) {
        if (document.fullscreenElement) return document.exitFullscreen().catch(() => {});
        if (el.requestFullscreen) el.requestFullscreen().catch(() => {});
      }
      document.getElementById('fullwall').addEventListener('click', () => full(box));
      for (const t of tiles()) {
        t.fig.dataset.title = t.fig.querySelector('figcaption b')?.textContent || '';
        const link = t.fig.querySelector('a:not([data-open])');
        // A click selects (ctrl/cmd-click still opens the single view); a double click fills the screen.
        link.addEventListener('click', e => { if (e.ctrlKey || e.metaKey || e.shiftKey) return; e.preventDefault(); select(t.name); });
        link.addEventListener('dblclick', e => { e.preventDefault(); select(t.name); full(t.fig); });
      }
      document.addEventListener('keydown', e => {
        if (e.target.matches && e.target.matches('input, select') && e.key !== 'Escape') return;
        if (/^[1-9]$/.test(e.key)) { const name = arrange.shown[+e.key - 1]; if (name) select(name); }
        else if (e.key === 'f') full(arrange.selected ? wall.tiles[arrange.selected].fig : box);
        else if (e.key === 'm') toggleSound();
        else if (e.key === 'b') bookmark();
        else if (e.key === 'Escape') { if (document.fullscreenElement) document.exitFullscreen().catch(() => {}); else select(null); }
        else return;
        e.preventDefault();
      });

      // The selected tile's audio, decoded by the page (AAC or Opus as received) and played
      // through Web Audio; muted until the operator asks.
      const audio = wall.audio = {samples: 0, chunks: 0, errors: 0, codec: null, decoder: null, ctx: null, playhead: 0, stream: null};
      const mute = document.getElementById('mute');
      function toggleSound() {
        arrange.muted = !arrange.muted;
        mute.textContent = arrange.muted ? 'sound off' : 'sound on';
        if (!arrange.muted && !audio.ctx) { try { audio.ctx = new AudioContext({latencyHint: 'interactive'}); } catch (e) {} }
        if (audio.ctx && audio.ctx.state === 'suspended') audio.ctx.resume().catch(() => {});
        listen();
      }
      mute.addEventListener('click', toggleSound);
      function listen() {
        const name = arrange.muted ? null : arrange.selected;
        if (name === audio.stream) return;
        audio.stream = name;
        closeAudio();
        send({audio: name || ''});
      }
      function closeAudio() {
        if (audio.decoder && audio.decoder.state !== 'closed') { try { audio.decoder.close(); } catch (e) {} }
        audio.decoder = null; audio.codec = null;
      }
      function play(data) {
        const ctx = audio.ctx; if (!ctx) return;
        const buffer = ctx.createBuffer(data.numberOfChannels, data.numberOfFrames, data.sampleRate);
        for (let c = 0; c < data.numberOfChannels; c++) {
          const plane = new Float32Array(data.numberOfFrames);
          data.copyTo(plane, {planeIndex: c, format: 'f32-planar'});
          buffer.copyToChannel(plane, c);
        }
        const src = ctx.createBufferSource(); src.buffer = buffer; src.connect(ctx.destination);
        // Keep at most 150 ms queued: late audio is dropped, never allowed to drift behind the picture.
        if (audio.playhead < ctx.currentTime || audio.playhead > ctx.currentTime + 0.15) audio.playhead = ctx.currentTime + 0.02;
        src.start(audio.playhead); audio.playhead += buffer.duration;
      }
      wall.onAudio = (t, ts, config, payload) => {
        if (t.name !== audio.stream || !('AudioDecoder' in window)) return;
        if (config !== audio.codec) {
          closeAudio();
          const [codec, rate, channels, hex] = config.split('/');
          const c = {codec, sampleRate: +rate || 48000, numberOfChannels: +channels || 2};
          if (hex) c.description = new Uint8Array(hex.match(/../g).map(h => parseInt(h, 16)));
          audio.decoder = new AudioDecoder({output: d => { audio.samples += d.numberOfFrames; try { play(d); } finally { d.close(); } },
                                            error: () => { audio.errors++; closeAudio(); }});
          try { audio.decoder.configure(c); audio.codec = config; } catch (e) { audio.errors++; closeAudio(); return; }
        }
        audio.chunks++;
        try { audio.decoder.decode(new EncodedAudioChunk({type: 'key', timestamp: ts, data: payload})); } catch (e) { audio.errors++; }
      };
      apply();
    })();
    """#
}
