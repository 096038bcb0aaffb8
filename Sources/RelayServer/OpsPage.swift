import Relay
import Wire
import Foundation

/// The operations page: every stream's live preview in a plain `<img>`, with its state.
enum OpsPage {
    static func escape(_ s: String) -> String {
        s.replacingAll("&", with: "&amp;").replacingAll("<", with: "&lt;")
            .replacingAll(">", with: "&gt;").replacingAll("\"", with: "&quot;")
    }

    static func render(engine: RelayEngine, visible: (String) -> Bool = { _ in true }) -> String {
        var cards = ""
        let hubs = engine.hubs
        for (name, hub) in hubs.sorted(by: { $0.key < $1.key }) where visible(name) {
            let s = hub.currentStatus
            let n = escape(name)
            cards += """
            <figure><a href="/streams/\(n)/"><img src="/streams/\(n)/preview.mjpg" alt="\(n)" width="480"></a>
            <figcaption><b>\(escape(s.title ?? name))</b> · <span data-state="\(n)">\(escape(s.state.rawValue))</span><span data-why="\(n)">\(s.lastError.map { " · " + escape($0) } ?? "")</span><span data-damage="\(n)" class="damage">\(s.damaged ? " · damaged" : "")</span></figcaption></figure>
            """
        }
        return """
        <!doctype html><html><head><meta charset="utf-8"><title>LiveRelay</title>
        <style>body{font-family:sans-serif;background:#111;color:#eee}figure{display:inline-block;margin:8px}img{background:#222}.damage{color:#d90}figure.damaged img{outline:3px solid #d90}</style>
        </head><body><h1>LiveRelay</h1>\(cards)
        <script>
        // Each tile's state follows the stream's events (/api/events), without reloading the page.
        const events = new EventSource('/api/events');
        for (const kind of ['live', 'reconnecting', 'stopped']) {
          events.addEventListener(kind, message => {
            const e = JSON.parse(message.data);
            const state = document.querySelector(`[data-state="${CSS.escape(e.stream)}"]`);
            const why = document.querySelector(`[data-why="${CSS.escape(e.stream)}"]`);
            if (state) state.textContent = kind + (e.attempt ? ` (attempt ${e.attempt})` : '') + ' ' + new Date(e.at).toLocaleTimeString();
            if (why) why.textContent = kind === 'live' ? '' : (e.detail ? ' · ' + e.detail : '');
          });
        }
        // Media lost upstream: the tile is marked until the next clean keyframe (a preview with
        // freshness "clean" shows its last clean picture, labelled HELD, meanwhile).
        for (const kind of ['damaged', 'repaired']) {
          events.addEventListener(kind, message => {
            const e = JSON.parse(message.data);
            const mark = document.querySelector(`[data-damage="${CSS.escape(e.stream)}"]`);
            if (!mark) return;
            mark.textContent = kind === 'damaged' ? ' · damaged since ' + new Date(e.at).toLocaleTimeString() : '';
            mark.closest('figure').classList.toggle('damaged', kind === 'damaged');
          });
        }
        </script></body></html>
        """
    }
}
