import Foundation
import Relay
import RelayAPI

/// One stream's pages.
///
/// `/streams/{name}/watch` is the public page, for a web team's viewers: the HLS republish in a
/// `<video>` (hls.js in low-latency mode where LiveRelay has a copy and the browser has Media
/// Source Extensions, else the browser's own HLS), its title and description, and an embed
/// snippet; no ops controls. Without HLS it shows the preview, and without either says so.
/// `/streams/{name}/` is the operator's full-size view: the preview where there is one, else
/// the public page.
enum ViewerPage {
    static func render(name: String, status: StreamStatus, meta: StreamMeta?, hlsjs: Bool, host: String?, webrtc: Bool = false, iceServers: Bool = false) -> String {
        if meta?.preview != nil {
            let n = OpsPage.escape(name)
            let title = OpsPage.escape(status.title ?? name)
            return """
            <!doctype html><html><head><meta charset="utf-8"><title>\(title) · LiveRelay</title>
            <style>html,body{margin:0;padding:0;background:#000}img{display:block}</style>
            </head><body><img id="preview" data-stream="\(n)" src="/streams/\(n)/preview.mjpg" alt="\(title)"></body></html>
            """
        }
        return watch(name: name, status: status, meta: meta, hlsjs: hlsjs, host: host, webrtc: webrtc, iceServers: iceServers)
    }

    static func watch(name: String, status: StreamStatus, meta: StreamMeta?, hlsjs: Bool, host: String?, webrtc: Bool = false, iceServers: Bool = false) -> String {
        let n = OpsPage.escape(name)
        let title = OpsPage.escape(meta?.title ?? status.title ?? name)
        let description = meta?.description.map { "<p>\(OpsPage.escape($0))</p>" } ?? ""
        let player: String
        if meta?.hls != nil || webrtc {
            let src = meta?.hls.map { "'\(OpsPage.escape($0))'" } ?? "null"
            player = """
            <video id="video" data-stream="\(n)" controls muted autoplay playsinline></video>
            <p id="fallback" class="none" hidden></p>
            <script>\(LiveEdgeScript.source)</script>
            <script type="module">
            const v = document.getElementById('video');
            const q = new URLSearchParams(location.search);
            const hlsSrc = \(src);
            // The page's query (a token, a signature) goes on to the media URLs; its own switches do not.
            const pass = new URLSearchParams(location.search);
            pass.delete('via'); pass.delete('native'); pass.delete('relay');
            const query = pass.toString() ? '?' + pass : '';
            // WebRTC (WHEP) first, where the browser has it and the server offers it: sub-second.
            // Then LL-HLS: hls.js where MSE exists and LiveRelay has a copy; else, or with
            // ?native, the browser's own HLS (Safari on iPhone has no MSE). ?via=hls skips WebRTC.
            async function playWebRTC() {
              const pc = new RTCPeerConnection(await \(PublishPage.rtcConfiguration(name: n, kind: "whep", iceServers: iceServers)));
              window.pc = pc;
              pc.addTransceiver('video', { direction: 'recvonly' });
              pc.addTransceiver('audio', { direction: 'recvonly' });
              const media = new MediaStream();
              pc.ontrack = e => {
                // The smallest playout delay the browser allows: this is a live view.
                try { e.receiver.jitterBufferTarget = 0; } catch (_) {}
                try { e.receiver.playoutDelayHint = 0; } catch (_) {}
                media.addTrack(e.track);
                v.srcObject = media;
                v.play().catch(() => {});
              };
              const offer = await pc.createOffer();
              await pc.setLocalDescription(offer);
              const r = await fetch('/streams/\(n)/whep' + query, { method: 'POST', headers: { 'Content-Type': 'application/sdp' }, body: offer.sdp });
              if (r.status !== 201) throw new Error('WHEP answered ' + r.status + ': ' + (await r.text()).slice(0, 200));
              const session = r.headers.get('Location');
              await pc.setRemoteDescription({ type: 'answer', sdp: await r.text() });
              await new Promise((ok, fail) => {
                const t = setTimeout(() => fail(new Error('WebRTC did not connect within 5 s')), 5000);
                pc.onconnectionstatechange = () => {
                  if (pc.connectionState === 'connected') { clearTimeout(t); ok(); }
                  if (pc.connectionState === 'failed') { clearTimeout(t); fail(new Error('WebRTC failed')); }
                };
              });
              addEventListener('pagehide', () => { fetch(session, { method: 'DELETE', keepalive: true }); pc.close(); });
              v.dataset.player = 'webrtc';
              v.dataset.session = session;
            }
            async function playHLS() {
              if (!hlsSrc) {
                const f = document.getElementById('fallback');
                f.hidden = false; f.textContent = 'WebRTC did not play here, and this stream has no HLS.';
                return;
              }
              const src = hlsSrc + query;
              const useHlsJs = \(hlsjs) && 'MediaSource' in window && !q.has('native');
              if (useHlsJs) {
                const { t: attach } = await import('/assets/hls.mjs');
                window.hls = attach(v, src, () => v.play());
                window.liveRelayKeepLive(window.hls, v); // LiveEdgeScript
                v.dataset.player = 'hls.js';
              } else {
                v.src = src; v.dataset.player = 'native'; v.play().catch(() => {});
              }
            }
            if (\(webrtc) && 'RTCPeerConnection' in window && q.get('via') !== 'hls') {
              try { await playWebRTC(); } catch (e) {
                console.warn('WebRTC:', e);
                v.dataset.webrtcError = String(e.message || e);
                try { window.pc && window.pc.close(); } catch (_) {}
                v.srcObject = null;
                await playHLS();
              }
            } else {
              await playHLS();
            }
            </script>
            """
        } else if let preview = meta?.preview {
            player = "<img id=\"preview\" data-stream=\"\(n)\" src=\"\(OpsPage.escape(preview))\" alt=\"\(title)\">"
        } else {
            player = "<p class=\"none\">This stream is not published for the web (no HLS, no preview).</p>"
        }
        let origin = host.map { "//\(OpsPage.escape($0))" } ?? ""
        let embed = OpsPage.escape("<iframe src=\"\(origin)/streams/\(name)/watch\" width=\"640\" height=\"360\" allow=\"autoplay\" allowfullscreen></iframe>")
        return """
        <!doctype html><html><head><meta charset="utf-8"><title>\(title)</title>
        <meta name="viewport" content="width=device-width">
        <style>body{font-family:sans-serif;margin:0;background:#000;color:#ddd}main{max-width:1280px;margin:auto;padding:8px}
        video,img{width:100%;background:#000;display:block}h1{font-size:20px}details{font-size:13px}code{word-break:break-all}</style>
        </head><body><main>\(player)<h1>\(title)</h1>\(description)
        <details><summary>Embed</summary><code id="embed">\(embed)</code></details></main></body></html>
        """
    }
}
