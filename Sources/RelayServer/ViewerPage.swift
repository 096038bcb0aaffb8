import Relay

/// One stream's page: its live preview at native size on a black page (what an operator opens
/// full-screen), linked from the ops page.
enum ViewerPage {
    static func render(name: String, status: StreamStatus) -> String {
        let n = OpsPage.escape(name)
        let title = OpsPage.escape(status.title ?? name)
        return """
        <!doctype html><html><head><meta charset="utf-8"><title>\(title) · LiveRelay</title>
        <style>html,body{margin:0;padding:0;background:#000}img{display:block}</style>
        </head><body><img id="preview" src="/streams/\(n)/preview.mjpg" alt="\(title)"></body></html>
        """
    }
}
