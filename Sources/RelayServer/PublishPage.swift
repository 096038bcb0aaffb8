import Relay

/// `/streams/{name}/publish`: a phone's browser (or any) sends its camera and microphone to a
/// `source: publish` stream by WHIP: no app. H.264 is preferred where the browser has it (the
/// stream is passed on without re-encoding). `?auto` starts at once (a kiosk, a test);
/// otherwise a tap does, as browsers ask for the camera on a gesture. Its audio is offered
/// both ways: an operator's push-to-talk plays here (`window.talkLevel()` says how loud and at
/// what pitch, for tests).
enum PublishPage {
    static func render(name: String, iceServers: Bool = false) -> String {
        let n = OpsPage.escape(name)
        return """
        <!doctype html><html><head><meta charset="utf-8"><title>Publish \(n) · LiveRelay</title>
        <meta name="viewport" content="width=device-width">
        <style>body{font-family:sans-serif;margin:0;background:#000;color:#ddd}main{max-width:960px;margin:auto;padding:8px}
        video{width:100%;background:#111;display:block}button{font-size:20px;padding:12px 24px;margin:8px 0}</style>
        </head><body data-state="idle"><main>
        <video id="self" muted autoplay playsinline></video>
        <button id="go">Go live as \(n)</button> <span id="state">idle</span> <span id="heard"></span>
        <audio id="talkback" autoplay></audio>
        <script type="module">
        const stateEl = document.getElementById('state');
        const say = s => { stateEl.textContent = s; document.body.dataset.state = s; };
        const pass = new URLSearchParams(location.search); pass.delete('auto'); pass.delete('relay');
        const query = pass.toString() ? '?' + pass : '';
        async function start() {
          document.getElementById('go').disabled = true;
          say('asking for the camera');
          const media = await navigator.mediaDevices.getUserMedia({
            video: { width: { ideal: 1280 }, height: { ideal: 720 }, facingMode: 'environment' }, audio: true });
          document.getElementById('self').srcObject = media;
          const pc = new RTCPeerConnection(await \(rtcConfiguration(name: n, kind: "whip", iceServers: iceServers)));
          window.pc = pc;
          for (const track of media.getTracks()) {
            // Audio both ways: the operators' talk comes back on it.
            const t = pc.addTransceiver(track, { direction: track.kind === 'audio' ? 'sendrecv' : 'sendonly', streams: [media] });
            if (track.kind === 'video' && RTCRtpSender.getCapabilities) {
              const codecs = RTCRtpSender.getCapabilities('video').codecs;
              const h264 = codecs.filter(c => c.mimeType === 'video/H264' && /packetization-mode=1/.test(c.sdpFmtpLine || ''));
              if (h264.length) t.setCodecPreferences(h264.concat(codecs.filter(c => c.mimeType !== 'video/H264')));
            }
          }
          pc.onconnectionstatechange = () => say(pc.connectionState);
          pc.ontrack = e => {
            if (e.track.kind !== 'audio') return;
            document.getElementById('talkback').srcObject = new MediaStream([e.track]);
            const ctx = new AudioContext(), analyser = ctx.createAnalyser();
            analyser.fftSize = 8192;
            ctx.createMediaStreamSource(new MediaStream([e.track])).connect(analyser);
            const bins = new Float32Array(analyser.frequencyBinCount), wave = new Float32Array(analyser.fftSize);
            window.talkLevel = () => {
              analyser.getFloatTimeDomainData(wave);
              analyser.getFloatFrequencyData(bins);
              let sum = 0, peak = 0;
              for (const v of wave) sum += v * v;
              for (let i = 1; i < bins.length; i++) if (bins[i] > bins[peak]) peak = i;
              return { rms: Math.sqrt(sum / wave.length), peakHz: peak * ctx.sampleRate / analyser.fftSize };
            };
            setInterval(() => {
              const l = window.talkLevel();
              document.getElementById('heard').textContent = l.rms > 0.01 ? '· an operator is talking' : '';
            }, 250);
          };
          const offer = await pc.createOffer();
          await pc.setLocalDescription(offer);
          say('offering');
          const r = await fetch('/streams/\(n)/whip' + query, { method: 'POST', headers: { 'Content-Type': 'application/sdp' }, body: offer.sdp });
          if (r.status !== 201) { say('refused: ' + r.status + ' ' + (await r.text()).slice(0, 200)); return; }
          const session = r.headers.get('Location');
          await pc.setRemoteDescription({ type: 'answer', sdp: await r.text() });
          addEventListener('pagehide', () => { fetch(session, { method: 'DELETE', keepalive: true }); pc.close(); });
        }
        document.getElementById('go').onclick = () => start().catch(e => say('failed: ' + (e.message || e)));
        if (new URLSearchParams(location.search).has('auto')) start().catch(e => say('failed: ' + (e.message || e)));
        </script></main></body></html>
        """
    }

    /// A JavaScript expression (a promise) for the page's RTCPeerConnection configuration: the
    /// STUN and TURN servers asked of `/streams/{name}/{kind}/ice-servers` when the server has
    /// some (TURN credentials are minted per asker), and `?relay` to use TURN only. The page
    /// defines `query` (its own query, passed on).
    static func rtcConfiguration(name n: String, kind: String, iceServers: Bool) -> String {
        """
        (async () => {
          const config = {};
          if (\(iceServers)) {
            const r = await fetch('/streams/\(n)/\(kind)/ice-servers' + query);
            if (r.ok) config.iceServers = (await r.json()).ice_servers;
          }
          if (new URLSearchParams(location.search).has('relay')) config.iceTransportPolicy = 'relay';
          return config;
        })()
        """
    }
}
