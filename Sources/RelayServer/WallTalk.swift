/// Push-to-talk from the ops wall: when the selected tile's stream has a talk path (its
/// camera's backchannel, its field unit; `GET /streams/NAME/talk`) and the viewer has `talk`,
/// a button beside the selection sends the microphone while it is held, and so does holding
/// `t`. The microphone goes as Opus over WebRTC (`POST /streams/NAME/talk`, raw: no echo
/// cancellation, noise suppression or gain control, which smear a voice's onsets and cost
/// time), and stops on release, on leaving the window or page, on losing the wall's socket,
/// and when the server ends it (its maximum, or a higher permission taking the floor). Every
/// tile shows who is talking to its stream (`talk_started`/`talk_ended` events).
/// `window.wall.talk` is there for tests and the bench (`micOpenedAt`: when the microphone
/// opened, on the wall clock).
enum WallTalk {
    static let toolbar = #"<span id="talk" hidden> · <button id="talkbutton" title="hold t">hold to talk</button> <span id="talkstate"></span></span>"#

    static let javascript = #"""
    (() => {
      if (only || !wall.arrange) return;
      const el = document.getElementById('talk'), button = document.getElementById('talkbutton'), state = document.getElementById('talkstate');
      const talk = wall.talk = {stream: null, format: null, active: null, state: 'idle', error: null, sessions: 0, micOpenedAt: null, talkers: {}};
      const token = new URLSearchParams(location.search).get('token');
      const auth = token ? {Authorization: 'Bearer ' + token} : {};
      const url = name => '/streams/' + encodeURIComponent(name) + '/talk';
      function say(s, error) {
        talk.state = s; if (error !== undefined) talk.error = error;
        state.textContent = s === 'talking' ? '● talking' : s === 'idle' ? (talk.error ? talk.error : '') : s;
        button.classList.toggle('on', s === 'talking');
      }
      async function refresh(name) {
        const r = await fetch(url(name), {headers: auth}).catch(() => null);
        if (!r || !r.ok || wall.arrange.selected !== name) return;
        const s = await r.json();
        if (!s.available) return;
        talk.stream = name; talk.format = s.format;
        button.title = 'hold t · to ' + name + ' (' + s.format + ')';
        el.hidden = false;
      }
      talk.select = name => {
        stop();
        talk.stream = null; el.hidden = true; talk.error = null; say('idle');
        if (name) refresh(name);
      };
      async function start() {
        if (!talk.stream || talk.active) return;
        const me = talk.active = {name: talk.stream, pc: null, mic: null, location: null, stopped: false};
        say('opening the microphone', null);
        try {
          me.mic = await navigator.mediaDevices.getUserMedia({audio: {echoCancellation: false, noiseSuppression: false, autoGainControl: false}});
          talk.micOpenedAt = Date.now();
          if (me.stopped) return close(me);
          const pc = me.pc = new RTCPeerConnection();
          pc.addTransceiver(me.mic.getAudioTracks()[0], {direction: 'sendonly', streams: [me.mic]});
          pc.onconnectionstatechange = () => {
            if (pc.connectionState === 'connected' && talk.active === me) say('talking');
            if (['failed', 'closed', 'disconnected'].includes(pc.connectionState) && talk.active === me) stop('the connection ended');
          };
          await pc.setLocalDescription(await pc.createOffer());
          const r = await fetch(url(me.name), {method: 'POST', headers: Object.assign({'Content-Type': 'application/sdp'}, auth), body: pc.localDescription.sdp});
          if (r.status !== 201) {
            const j = await r.json().catch(() => ({}));
            throw new Error((j.error || 'refused') + ' (' + r.status + ')');
          }
          me.location = r.headers.get('Location');
          await pc.setRemoteDescription({type: 'answer', sdp: await r.text()});
          talk.sessions++;
          if (me.stopped) return close(me);
          say('connecting');
        } catch (e) {
          if (talk.active === me) talk.active = null;
          close(me);
          say('idle', String(e.message || e));
        }
      }
      function close(me, keepalive) {
        if (me.location) fetch(me.location, {method: 'DELETE', headers: auth, keepalive: !!keepalive}).catch(() => {});
        me.location = null;
        if (me.pc) me.pc.close();
        if (me.mic) for (const t of me.mic.getTracks()) t.stop();
      }
      function stop(why, keepalive) {
        const me = talk.active;
        if (!me) return;
        talk.active = null; me.stopped = true;
        close(me, keepalive);
        say('idle', why || null);
      }
      talk.start = start; talk.stop = stop;
      // Every tile shows who talks to its stream; the talker is told when the server ended it.
      talk.event = (t, m) => {
        const label = t.fig.querySelector('[data-talk]');
        if (m.kind === 'talk_started') {
          talk.talkers[m.stream] = m.by;
          if (label) label.textContent = ' · 🎙 ' + m.by + ' talking';
        } else {
          if (talk.talkers[m.stream] === m.by) { delete talk.talkers[m.stream]; if (label) label.textContent = ''; }
          // This page's own talk, ended by the server (its maximum, a higher permission).
          const me = talk.active;
          if (me && me.location && me.location.endsWith('/' + m.session)) stop(m.detail);
        }
      };
      button.addEventListener('pointerdown', e => { e.preventDefault(); start(); });
      for (const k of ['pointerup', 'pointerleave', 'pointercancel']) button.addEventListener(k, () => stop());
      document.addEventListener('keydown', e => {
        if (e.code !== 'KeyT' || e.repeat || e.ctrlKey || e.altKey || e.metaKey || (e.target.matches && e.target.matches('input, select'))) return;
        e.preventDefault(); start();
      });
      document.addEventListener('keyup', e => { if (e.code === 'KeyT') stop(); });
      window.addEventListener('blur', () => stop());
      document.addEventListener('visibilitychange', () => { if (document.hidden) stop(); });
      window.addEventListener('pagehide', () => stop(null, true));
      const closed = wall.onSocketClosed;
      wall.onSocketClosed = () => { if (closed) closed(); stop('the wall lost its connection'); };
    })();
    """#
}
