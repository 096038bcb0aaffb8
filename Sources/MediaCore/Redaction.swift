import Foundation
import Wire
import Synchronization

/// Removes credentials from source and destination URLs and from free text.
///
/// Every URL that reaches a log line, an error, the API or a metric label passes through
/// `redact(_:)`. As a second net, secrets seen in URLs are remembered and `scrub(_:)` masks them
/// in any text (FFmpeg's own log lines included).
public enum Redactor {
    public static let mask = "***"

    /// Query keys whose values are credentials, matched as families: anything with token,
    /// secret, signature, credential or key in its name, anything starting with pass or auth,
    /// and a few exact names (an SRT `streamid` may carry a user and a key).
    static func isSecretQueryKey(_ name: String) -> Bool {
        let n = name.lowercased()
        if ["token", "secret", "signature", "credential", "key", "sig"].contains(where: { n.utf8Range(of: $0) != nil }) { return true }
        if n.hasPrefix("pass") || n.hasPrefix("auth") || n.hasPrefix("pwd") { return true }
        return ["jwt", "streamid"].contains(n)
    }

    private static let known = Mutex<(set: Set<String>, order: [String])>(([], []))
    /// Secrets remembered at most (the oldest go first): configured URLs carry a few each, and
    /// `scrub` looks for every one of them in every line it masks.
    static let rememberedLimit = 256

    /// Remembers a secret so that `scrub` masks it wherever it appears later.
    public static func remember(secret: String) {
        guard secret.count >= 3 else { return }
        insert(secret)
        if let decoded = secret.removingPercentEncodingSimple, decoded != secret, decoded.count >= 3 { insert(decoded) }
    }

    private static func insert(_ secret: String) {
        known.withLock { k in
            guard k.set.insert(secret).inserted else { return }
            k.order.append(secret)
            if k.order.count > rememberedLimit { k.set.remove(k.order.removeFirst()) }
        }
    }

    /// The URL with its password, credential query values and the stream key masked: the last
    /// path component when `hideStreamKey` says so or the scheme is RTMP (`rtmp://host/app/KEY`).
    /// The user name stays: it helps an operator tell sources apart. Secrets found are
    /// remembered for `scrub` (call it on configured URLs: what a network peer writes in a log
    /// line is never learnt as a secret).
    public static func redact(_ url: String, hideStreamKey: Bool? = nil) -> String {
        let (text, secrets) = masking(url, hideStreamKey: hideStreamKey)
        remember(secrets: secrets)
        return text
    }

    /// The secrets `redact` masks in a URL (its password, credential query values, stream key),
    /// learning nothing: a configuration lists its secrets with this.
    public static func secrets(in url: String, hideStreamKey: Bool? = nil) -> [String] {
        masking(url, hideStreamKey: hideStreamKey).secrets
    }

    /// Remembers each secret (see `remember(secret:)`).
    public static func remember(secrets: some Sequence<String>) {
        for s in secrets { remember(secret: s) }
    }

    /// `redact`'s text and the secrets it masked, without remembering them.
    public static func masking(_ url: String, hideStreamKey: Bool? = nil) -> (text: String, secrets: [String]) {
        var found: [String] = []
        guard let schemeEnd = url.utf8Range(of: "://") else { return (scrub(url), []) }
        let scheme = url[..<schemeEnd.lowerBound]
        let hideStreamKey = hideStreamKey ?? ["rtmp", "rtmps", "rtmpt", "rtmpe"].contains(scheme.lowercased())
        var rest = Substring(url[schemeEnd.upperBound...])
        var fragment = ""
        var query: Substring? = nil
        // The query first: a `#` inside it is data (SRT's streamid=#!::r=…,m=publish), not a fragment.
        if let q = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: q)...]
            rest = rest[..<q]
        } else if let hash = rest.firstIndex(of: "#") {
            fragment = String(rest[hash...])
            rest = rest[..<hash]
        }
        var authority = rest
        var path: Substring = ""
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            path = rest[slash...]
        }
        var out = String(scheme) + "://"
        if let at = authority.lastIndex(of: "@") {
            let userinfo = authority[..<at]
            if let colon = userinfo.firstIndex(of: ":") {
                let password = String(userinfo[userinfo.index(after: colon)...])
                found.append(password)
                out += userinfo[..<colon] + ":" + mask + "@"
            } else {
                // A lone user part can itself be a token (`rtmp://TOKEN@host`); keep short names.
                let user = String(userinfo)
                if user.count >= 16 { found.append(user); out += mask + "@" } else { out += user + "@" }
            }
            out += authority[authority.index(after: at)...]
        } else {
            out += authority
        }
        if hideStreamKey, let lastSlash = path.lastIndex(of: "/"), path.index(after: lastSlash) < path.endIndex {
            let key = String(path[path.index(after: lastSlash)...])
            found.append(key)
            out += path[...lastSlash] + mask
        } else {
            out += path
        }
        if let query {
            let parts = query.split(separator: "&", omittingEmptySubsequences: false).map { part -> String in
                guard let eq = part.firstIndex(of: "=") else { return String(part) }
                let name = part[..<eq].lowercased()
                if isSecretQueryKey(name) {
                    found.append(String(part[part.index(after: eq)...]))
                    return part[..<eq] + "=" + mask
                }
                return String(part)
            }
            out += "?" + parts.joined(separator: "&")
        }
        return (out + fragment, found)
    }

    /// Masks every remembered secret and every `scheme://user:password@` in free text. Learns
    /// nothing from the text: a peer's words never become a "secret" that then masks other text.
    public static func scrub(_ text: String) -> String {
        // Built afresh, left to right: no index of the input is used on a changed string (the
        // fuzzer found the old in-place version reading past the end).
        var result = ""
        var rest = Substring(text)
        while let r = rest.utf8Range(of: "://") {
            result += rest[..<r.upperBound]
            let tail = rest[r.upperBound...]
            let end = tail.firstIndex(where: { $0 == "/" || $0 == " " || $0 == "'" || $0 == "\"" || $0 == "\n" }) ?? tail.endIndex
            let authority = tail[..<end]
            if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
                result += authority[...colon] + mask + authority[at...]
            } else {
                result += authority
            }
            rest = tail[end...]
        }
        result += rest
        let secrets = known.withLock { $0.set }
        for secret in secrets.sorted(by: { $0.count > $1.count }) where result.utf8Range(of: secret) != nil {
            result = result.replacingAll(secret, with: mask)
        }
        return result
    }
}

extension String {
    var removingPercentEncodingSimple: String? {
        guard contains("%") else { return nil }
        var bytes: [UInt8] = []
        var it = utf8.makeIterator()
        while let b = it.next() {
            if b == UInt8(ascii: "%"), let h = it.next(), let l = it.next(),
               let v = UInt8(String(decoding: [h, l], as: UTF8.self), radix: 16) {
                bytes.append(v)
            } else {
                bytes.append(b)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

}
