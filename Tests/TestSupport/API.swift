public import Foundation
import RelayAPI
import Bench

extension Servers {
    /// What the server at `url` answers, as a `T` (RelayAPI's decoder): how tests read the API.
    /// `extra` goes to curl (headers, credentials). Throws with the answer's text when it is not
    /// a `T` (a refusal's `{"error": …}`, nothing at all).
    public static func api<T: Decodable>(_ type: T.Type, _ url: String, _ extra: [String] = [], maxTime: Int = 3) throws -> T {
        let r = try ChildProcess.run("/usr/bin/curl", ["-s", "-m", "\(maxTime)"] + extra + [url], timeout: Double(maxTime) + 2)
        do {
            return try RelayAPI.decoder.decode(type, from: Data(r.stdout.utf8))
        } catch {
            throw APIAnswerError(url: url, answer: String(r.stdout.prefix(600)), problem: "\(error)")
        }
    }

    /// The answer at `url` as a `T`, or nil (nothing answered, or not a `T`): for polls.
    public static func apiIfAny<T: Decodable>(_ type: T.Type, _ url: String, _ extra: [String] = [], maxTime: Int = 3) -> T? {
        ChildProcess.decode(type, from: url, curl: extra, maxTime: maxTime)
    }

    /// Decodes `text` (a line a script printed, a body) as a `T` with RelayAPI's decoder.
    public static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try RelayAPI.decoder.decode(type, from: Data(text.utf8))
    }
}

/// An answer that was not what the test asked for.
public struct APIAnswerError: Error, CustomStringConvertible {
    public var url: String
    public var answer: String
    public var problem: String
    public var description: String { "\(url) answered \(answer.isEmpty ? "nothing" : answer): \(problem)" }
}
