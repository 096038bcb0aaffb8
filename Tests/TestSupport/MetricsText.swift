public import Foundation

/// Prometheus text as the tests read it: every sample of one metric, with its labels.
public enum MetricsText {
    public struct Sample: Sendable {
        public let labels: [String: String]
        public let value: Double
    }

    public static func samples(_ text: String, _ name: String) -> [Sample] {
        text.split(separator: "\n").compactMap { line -> Sample? in
            guard line.hasPrefix(name + "{") || line.hasPrefix(name + " ") else { return nil }
            let parts = line.split(separator: " ")
            guard parts.count >= 2, let value = Double(parts[parts.count - 1]) else { return nil }
            var labels: [String: String] = [:]
            if let open = line.firstIndex(of: "{"), let close = line.lastIndex(of: "}"), open < close {
                for pair in line[line.index(after: open)..<close].split(separator: ",") {
                    let kv = pair.split(separator: "=", maxSplits: 1)
                    if kv.count == 2 { labels[String(kv[0])] = String(kv[1]).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
                }
            }
            return Sample(labels: labels, value: value)
        }
    }

    /// The sum of a metric's samples whose labels include `matching`.
    public static func sum(_ text: String, _ name: String, _ matching: [String: String] = [:]) -> Double {
        samples(text, name).filter { s in matching.allSatisfy { s.labels[$0.key] == $0.value } }.reduce(0) { $0 + $1.value }
    }
}
