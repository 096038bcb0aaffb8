import Foundation
import Relay

/// One stream's pages.
///
/// `/streams/{name}/watch` is the public page, for a web team's viewers: the HLS republish in a
/// `<video>` (hls.js in low-latency mode where LiveRelay has a copy and the browser has Media
/// Source Extensions, else the browser's own HLS), its title and description, and an embed
/// snippet; no ops controls. Without HLS it shows the preview, and without either says so.
/// `/streams/{name}/` is the operator's full-size view: the preview where there is one, else
/// the public page.
enum ViewerPage {
    static func render(name: String, status: StreamStatus, meta: StreamMeta?, hlsjs: Bool, host: String?) -> String {
        if meta?.preview != nil {
            let n = OpsPage.escape(name)
            let title = OpsPage.escape(status.title ?? name)
            return """
            <!doctype html><html><head><meta charset="utf-8"><title>\(title) · LiveRelay</title>
            <style>html,body{margin:0;padding:0;background:#000}img{display:block}</style>
            </head><body><img id="preview" data-stream="\(n)" src="/streams/\(n)/preview.mjpg" alt="\(title)"></body></html>
            """
        }
        return watch(name: name, status: status, meta: meta, hlsjs: hlsjs, host: host)
    }

    static func watch(name: String, status: StreamStatus, meta: StreamMeta?, hlsjs: Bool, host: String?) -> String {
        let n = OpsPage.escape(name)
        let title = OpsPage.escape(meta?.title ?? status.title ?? name)
        let description = meta?.description.map { "<p>\(OpsPage.escape($0))</p>" } ?? ""
        let player: String
        if let hls = meta?.hls {
            let src = OpsPage.escape(hls)
            player = """
            <video id="video" data-stream="\(n)" controls muted autoplay playsinline></video>
            <script type="module">
            const v = document.getElementById('video');
            const src = '\(src)' + location.search;
            // hls.js (low-latency mode) where MSE exists and LiveRelay has a copy; else, or with
            // ?native, the browser's own HLS (Safari on iPhone has no MSE).
            const useHlsJs = \(hlsjs) && 'MediaSource' in window && !new URLSearchParams(location.search).has('native');
            if (useHlsJs) {
              const { t: attach } = await import('/assets/hls.mjs');
              window.hls = attach(v, src, () => v.play());
              v.dataset.player = 'hls.js';
            } else {
              v.src = src; v.dataset.player = 'native'; v.play().catch(() => {});
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
