/// PTZ from the ops wall: when the selected tile's camera can be steered (its PTZ status
/// answers: an `onvif://` source with a PTZ profile, and the viewer has `ptz`), the arrow keys
/// pan and tilt and +/− zoom while they are held, and its presets are buttons beside the
/// selection (and "save here" makes one). Keys are taken by their code (Shift or a keyboard
/// layout does not change which is held; with Ctrl, Alt or Meta they are not PTZ). Commands go
/// one after another (a stop never overtakes its move), each given up after 3 s. A held key
/// sends its move again every 500 ms, when nothing is still on its way, with a one-second
/// timeout, so the camera stops within a second of a lost page or connection; releasing the
/// key, leaving the window, hiding the page or losing the wall's socket stops it at once.
/// `window.wall.ptz` is there for tests.
enum WallPTZ {
    static let toolbar = #"<span id="ptz" hidden></span>"#

    static let javascript = #"""
    (() => {
      if (only || !wall.arrange) return;
      const el = document.getElementById('ptz');
      const ptz = wall.ptz = {stream: null, presets: [], moving: null, sent: 0, errors: 0, last: null};
      const token = new URLSearchParams(location.search).get('token');
      const headers = Object.assign({'Content-Type': 'application/json'}, token ? {Authorization: 'Bearer ' + token} : {});
      const url = name => '/api/streams/' + encodeURIComponent(name) + '/ptz';
      let chain = Promise.resolve(), pending = 0;
      function command(o, keepalive) {
        const name = ptz.stream;
        if (!name) return chain;
        ptz.sent++; pending++;
        chain = chain.then(() => {
          const abort = new AbortController(), timer = setTimeout(() => abort.abort(), 3000);
          return fetch(url(name), {method: 'POST', headers, body: JSON.stringify(o), keepalive: !!keepalive, signal: abort.signal})
            .then(r => r.json().then(j => { ptz.last = {status: r.status, action: o.action}; if (!r.ok) { ptz.errors++; el.title = j.error || ''; } return j; }))
            .catch(() => { ptz.errors++; })
            .finally(() => { clearTimeout(timer); pending--; });
        });
        return chain;
      }
      async function refresh(name) {
        const r = await fetch(url(name), {headers}).catch(() => null);
        if (!r || !r.ok || wall.arrange.selected !== name) return;
        const s = await r.json();
        ptz.stream = name; ptz.presets = s.presets || [];
        el.replaceChildren('· PTZ ←↑↓→ +/− · ');
        for (const p of ptz.presets) {
          const b = document.createElement('button');
          b.textContent = p.name; b.dataset.preset = p.token; b.title = 'go to this preset';
          b.addEventListener('click', () => command({action: 'goto', preset: p.token}));
          el.append(b, ' ');
        }
        const save = document.createElement('button');
        save.textContent = 'save here'; save.dataset.savePreset = '';
        save.addEventListener('click', () => {
          const n = (prompt('Name of the preset') || '').trim();
          if (n) command({action: 'set', name: n}).then(() => refresh(name));
        });
        el.append(save);
        el.hidden = false;
      }
      ptz.select = name => {
        stop();
        ptz.stream = null; ptz.presets = []; el.hidden = true; el.replaceChildren();
        if (name) refresh(name);
      };
      const AXES = {ArrowLeft: ['pan', -1], ArrowRight: ['pan', 1], ArrowUp: ['tilt', 1], ArrowDown: ['tilt', -1],
                    Equal: ['zoom', 1], NumpadAdd: ['zoom', 1], Minus: ['zoom', -1], NumpadSubtract: ['zoom', -1]};
      const held = new Set();
      function move() {
        const v = {pan: 0, tilt: 0, zoom: 0};
        for (const k of held) { const [axis, sign] = AXES[k]; v[axis] = sign * 0.5; }
        if (!v.pan && !v.tilt && !v.zoom) return stop();
        ptz.moving = v;
        command(Object.assign({action: 'move', timeout: 1}, v));
      }
      function stop(keepalive) {
        held.clear();
        if (!ptz.moving) return;
        ptz.moving = null;
        command({action: 'stop'}, keepalive);
      }
      ptz.stop = stop;
      setInterval(() => { if (ptz.moving && pending === 0) command(Object.assign({action: 'move', timeout: 1}, ptz.moving)); }, 500);
      document.addEventListener('keydown', e => {
        if (!ptz.stream || !(e.code in AXES) || e.ctrlKey || e.altKey || e.metaKey || (e.target.matches && e.target.matches('input, select'))) return;
        e.preventDefault();
        if (held.has(e.code)) return;
        held.add(e.code); move();
      });
      document.addEventListener('keyup', e => {
        // A modifier let go or pressed ends every move (a key held with Meta gets no keyup on some systems).
        if (['Control', 'Alt', 'Meta', 'OS'].includes(e.key) && ptz.moving) return stop();
        if (!held.has(e.code)) return;
        held.delete(e.code);
        held.size ? move() : stop();
      });
      window.addEventListener('blur', () => stop());
      document.addEventListener('visibilitychange', () => { if (document.hidden) stop(); });
      window.addEventListener('pagehide', () => stop(true));
      wall.onSocketClosed = () => stop();
    })();
    """#
}
