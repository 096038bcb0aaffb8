import Access
import MediaCore

extension Configuration {
    /// Every secret this configuration holds, for the program to hand to `Redactor.remember`
    /// before it logs anything: parsing learns them and writes nowhere else.
    public var secrets: [String] {
        var out = streams.flatMap(\.secrets) + (ingest.defaults?.secrets ?? [])
        out += [ingest.srt?.passphrase, ingest.rtmp?.publishKey, auth?.signedURLSecret].compactMap { $0 }
        out += (webrtc?.iceServers ?? []).flatMap { [$0.credential, $0.secret].compactMap { $0 } }
        for hook in hooks.webhooks { out += Redactor.secrets(in: hook.url) + (hook.secret.map { [$0] } ?? []) }
        if let fleet {
            out += Redactor.secrets(in: fleet.postgres)
            if let p = fleet.pullCredentials, let colon = p.utf8.firstIndex(of: 0x3A) { out.append(String(p[p.index(after: colon)...])) }
        }
        return out
    }
}

extension Configuration.Stream {
    /// This stream's secrets: its publish key and SRT read passphrase, and those in its source, forward and HLS push
    /// URLs.
    public var secrets: [String] {
        var out = [publishKey, srtReadPassphrase].compactMap { $0 }
        out += Redactor.secrets(in: source)
        if let sub = substream { out += Redactor.secrets(in: sub.source) }
        if let push = hls?.push { out += Redactor.secrets(in: push) }
        for target in forward { out += Redactor.secrets(in: target.url, hideStreamKey: true) + (target.bearerToken.map { [$0] } ?? []) }
        return out
    }
}
