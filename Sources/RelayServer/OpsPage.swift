import Relay
import Foundation

/// The operations page: every stream's live preview in a plain `<img>`, with its state.
enum OpsPage {
    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    static func render(engine: RelayEngine, visible: (String) -> Bool = { _ in true }) -> String {
        var cards = ""
        for name in engine.hubs.keys.sorted() where visible(name) {
            let s = engine.hubs[name]!.currentStatus
            let n = escape(name)
            cards += """
            <figure><a href="/streams/\(n)/"><img src="/streams/\(n)/preview.mjpg" alt="\(n)" width="480"></a>
            <figcaption><b>\(escape(s.title ?? name))</b> · \(escape(s.state.rawValue))\(s.lastError.map { " · " + escape($0) } ?? "")</figcaption></figure>
            """
        }
        return """
        <!doctype html><html><head><meta charset="utf-8"><title>LiveRelay</title>
        <style>body{font-family:sans-serif;background:#111;color:#eee}figure{display:inline-block;margin:8px}img{background:#222}</style>
        </head><body><h1>LiveRelay</h1>\(cards)</body></html>
        """
    }
}
