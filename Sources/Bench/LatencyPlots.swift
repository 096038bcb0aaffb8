import Foundation

/// Plots a person can open: latency CDF per scenario, and latency over time.
public enum LatencyPlots {
    /// Twenty distinguishable colours (Tableau 20); beyond them a series is told apart by its
    /// dash pattern too, so no two lines look the same.
    static let colours = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22",
                          "#aec7e8", "#ff9896", "#98df8a", "#ffbb78", "#c5b0d5", "#c49c94", "#f7b6d2", "#9edae5", "#393b79", "#637939"]

    /// The stroke attributes of series `i`.
    static func stroke(_ i: Int) -> String {
        let dash = i < colours.count ? "" : " stroke-dasharray=\"\(["6 3", "2 2", "8 2 2 2"][(i / colours.count - 1) % 3])\""
        return "stroke=\"\(colours[i % colours.count])\"\(dash)"
    }

    /// The smallest 1, 2 or 5 × 10^k step whose five ticks reach `value`: ticks at round numbers.
    static func niceMax(_ value: Double) -> Double {
        let raw = max(value, 1e-9) / 5
        let magnitude = pow(10, floor(log10(raw)))
        let step = [1.0, 2, 2.5, 5, 10].map { $0 * magnitude }.first { $0 >= raw } ?? 10 * magnitude
        return step * 5
    }

    static func frame(_ title: String, xLabel: String, yLabel: String, xMax: Double, yMax: Double, body: String, legend: [String]) -> String {
        let w = 900.0, h = 520.0, l = 70.0, r = 260.0, t = 40.0, b = 50.0
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(w))\" height=\"\(Int(h))\" font-family=\"sans-serif\" font-size=\"12\">\n"
        svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"\(l)\" y=\"24\" font-size=\"15\">\(title)</text>\n"
        svg += "<line x1=\"\(l)\" y1=\"\(h - b)\" x2=\"\(w - r)\" y2=\"\(h - b)\" stroke=\"black\"/><line x1=\"\(l)\" y1=\"\(t)\" x2=\"\(l)\" y2=\"\(h - b)\" stroke=\"black\"/>\n"
        for i in 0...5 {
            let x = l + (w - l - r) * Double(i) / 5, y = h - b - (h - t - b) * Double(i) / 5
            svg += "<text x=\"\(x)\" y=\"\(h - b + 16)\" text-anchor=\"middle\">\(String(format: "%.0f", xMax * Double(i) / 5))</text>\n"
            svg += "<text x=\"\(l - 6)\" y=\"\(y + 4)\" text-anchor=\"end\">\(String(format: yMax <= 1 ? "%.1f" : "%.0f", yMax * Double(i) / 5))</text>\n"
        }
        svg += "<text x=\"\((l + w - r) / 2)\" y=\"\(h - 12)\" text-anchor=\"middle\">\(xLabel)</text>\n"
        svg += "<text x=\"16\" y=\"\((t + h - b) / 2)\" transform=\"rotate(-90 16 \((t + h - b) / 2))\" text-anchor=\"middle\">\(yLabel)</text>\n"
        svg += body
        for (i, name) in legend.enumerated() {
            let y = t + 16 * Double(i)
            svg += "<line x1=\"\(w - r + 10)\" y1=\"\(y + 2)\" x2=\"\(w - r + 26)\" y2=\"\(y + 2)\" stroke-width=\"3\" \(stroke(i))/><text x=\"\(w - r + 30)\" y=\"\(y + 6)\">\(name)</text>\n"
        }
        return svg + "</svg>\n"
    }

    static func scale(_ v: Double, _ max: Double, _ from: Double, _ to: Double) -> Double { from + (to - from) * min(1, v / max) }

    static func cdf(_ results: [ScenarioResult]) -> String {
        let shown = results.filter { !$0.latencies.isEmpty }
        let xMax = niceMax(max(50, (shown.compactMap { $0.percentile(99) }.max() ?? 100) * 1.1))
        var body = ""
        for (i, r) in shown.enumerated() {
            let s = r.latencies.sorted()
            let step = max(1, s.count / 300)
            let points = stride(from: 0, to: s.count, by: step).map { k in
                "\(String(format: "%.1f", scale(s[k], xMax, 70, 640))),\(String(format: "%.1f", 470 - 430 * Double(k + 1) / Double(s.count)))"
            }
            body += "<polyline fill=\"none\" \(stroke(i)) stroke-width=\"2\" points=\"\(points.joined(separator: " "))\"/>\n"
        }
        return frame("Latency CDF (capture → picture at the reader)", xLabel: "latency, ms", yLabel: "fraction of frames", xMax: xMax, yMax: 1, body: body, legend: shown.map(\.name))
    }

    static func overTime(_ results: [ScenarioResult], out: URL) -> String {
        let shown = results.filter { !$0.latencies.isEmpty }
        let yMax = niceMax(max(50, (shown.compactMap { $0.percentile(99) }.max() ?? 100) * 1.1))
        var body = ""
        var xMax = 1.0
        var series: [[(Double, Double)]] = []
        for r in shown {
            // Received time comes from the CSV the run just wrote.
            let text = (try? String(contentsOf: out.appendingPathComponent("\(r.name).csv"), encoding: .utf8)) ?? ""
            let rows = text.split(separator: "\n").dropFirst().compactMap { line -> (Double, Double)? in
                let c = line.split(separator: ",")
                guard c.count == 4, let t = Double(c[2]), let l = Double(c[3]) else { return nil }
                return (t, l)
            }
            guard let t0 = rows.first?.0 else { series.append([]); continue }
            let pts = rows.map { (($0.0 - t0) / 1000, $0.1) }
            xMax = max(xMax, pts.last?.0 ?? 1)
            series.append(pts)
        }
        xMax = niceMax(xMax)
        for (i, pts) in series.enumerated() {
            let step = max(1, pts.count / 400)
            let p = stride(from: 0, to: pts.count, by: step).map { k in
                "\(String(format: "%.1f", scale(pts[k].0, xMax, 70, 640))),\(String(format: "%.1f", 470 - (scale(pts[k].1, yMax, 0, 430))))"
            }
            body += "<polyline fill=\"none\" \(stroke(i)) stroke-width=\"1.5\" points=\"\(p.joined(separator: " "))\"/>\n"
        }
        return frame("Latency over time", xLabel: "seconds into the run", yLabel: "latency, ms", xMax: xMax, yMax: yMax, body: body, legend: shown.map(\.name))
    }
}
