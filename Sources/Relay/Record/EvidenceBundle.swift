public import Foundation
import Wire

/// What an incident's evidence bundle holds, signed: the incident, each camera's clip with
/// its manifest (every piece's SHA-256, the segments it came from and their hash-chain links),
/// the cameras with nothing recorded in the range, the bookmarks and the audit excerpt, and
/// the key that signed it.
public struct EvidenceManifest: Codable, Sendable {
    public struct Key: Codable, Sendable, Equatable {
        public var algorithm: String
        public var id: String
        /// Raw Ed25519 public key, base64.
        public var publicKey: String
    }
    public struct File: Codable, Sendable {
        /// The member's name inside the bundle's directory (`cam1.mp4`).
        public var name: String
        public var stream: String
        public var clip: ExportManifest
    }
    public struct Missing: Codable, Sendable {
        public var stream: String
        public var why: String
    }
    public var format: String
    public var incident: Incident
    public var node: String
    public var key: Key
    public var made: Date
    public var files: [File]
    public var missing: [Missing]
    public var bookmarks: [Bookmark]
    public var audit: [AuditEntry]
}

/// An incident's evidence as one ustar archive (`tar -xf` opens it): a directory
/// `incident-ID/` with an MP4 per camera (the recording's own bytes, not re-encoded), then
/// `manifest.json` and `manifest.json.sig` (the node's Ed25519 signature over the manifest's
/// exact bytes, base64). Written as it streams: each clip is hashed while it is sent, and the
/// manifest, which needs those hashes, comes last. ``verify(path:publicKey:)`` checks one with
/// no catalog and no node.
public enum EvidenceBundle {
    public static let format = "liverelay-evidence/1"
    public static let manifestName = "manifest.json"
    public static let signatureName = "manifest.json.sig"

    /// The manifest's JSON: snake_case keys, sorted, times in RFC 3339 to the millisecond.
    public static var encoder: JSONEncoder {
        let e = JSONEncoder()
        e.keyEncodingStrategy = .convertToSnakeCase
        e.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        e.dateEncodingStrategy = .custom { date, encoder in
            var c = encoder.singleValueContainer()
            try c.encode(timestamp(date))
        }
        return e
    }

    public static var decoder: JSONDecoder {
        let d = JSONDecoder()
        d.keyDecodingStrategy = .convertFromSnakeCase
        d.dateDecodingStrategy = .custom { decoder in
            let c = try decoder.singleValueContainer()
            let text = try c.decode(String.self)
            let f = ISO8601DateFormatter()
            f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            if let d = f.date(from: text) { return d }
            f.formatOptions = [.withInternetDateTime]
            guard let d = f.date(from: text) else { throw DecodingError.dataCorruptedError(in: c, debugDescription: "not an RFC 3339 time: \(text.prefix(40))") }
            return d
        }
        return d
    }

    static func timestamp(_ date: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.string(from: date)
    }

    /// One camera of the bundle: its clip of the incident's range (nil: nothing recorded), and
    /// the chain value before each of the clip's segments (by path).
    public struct Camera: Sendable {
        public var stream: String
        public var export: RecordingExport?
        public var previousChains: [String: String]

        public init(stream: String, export: RecordingExport?, previousChains: [String: String]) {
            self.stream = stream
            self.export = export
            self.previousChains = previousChains
        }
    }

    /// The directory every member is in.
    public static func directory(of incident: Incident) -> String { "incident-\(incident.id)" }

    /// Writes the bundle through `emit`: the clips (each hashed as it goes), then the signed
    /// manifest, then the archive's end. Returns the manifest, or nil when a file of a clip
    /// went while it was read (the archive is then cut short, without a manifest).
    public static func write(cameras: [Camera], incident: Incident, bookmarks: [Bookmark], audit: [AuditEntry], key: NodeKey, node: String,
                             now: Date = Date(), offload: (@escaping @Sendable () -> [UInt8]?) async throws -> [UInt8]?,
                             emit: ([UInt8]) async throws -> Void) async throws -> EvidenceManifest? {
        let dir = directory(of: incident)
        let mtime = Int(max(0, now.timeIntervalSince1970))
        var files: [EvidenceManifest.File] = []
        var missing: [EvidenceManifest.Missing] = []
        for camera in cameras {
            guard let export = camera.export else {
                missing.append(.init(stream: camera.stream, why: "nothing recorded in the incident's range"))
                continue
            }
            let name = "\(camera.stream).mp4"
            guard let header = Tar.header(name: "\(dir)/\(name)", size: export.length, mtime: mtime) else {
                missing.append(.init(stream: camera.stream, why: export.length > Tar.largestSize
                                     ? "its clip of the range is \(export.length) bytes, more than a tar member holds (8 GiB): export it in shorter ranges"
                                     : "its name does not fit a tar header"))
                continue
            }
            try await emit(header)
            guard let hashed = try await export.writeHashing(offload: offload, emit) else { return nil }
            try await emit(Tar.padding(after: export.length))
            let clip = ExportManifest(export, stream: camera.stream, node: node, requestedStart: incident.start,
                                      requestedDuration: incident.end.timeIntervalSince(incident.start),
                                      pieceHashes: hashed.pieceHashes, sha256: hashed.sha256, previousChains: camera.previousChains)
            files.append(.init(name: name, stream: camera.stream, clip: clip))
        }
        let manifest = EvidenceManifest(format: format, incident: incident, node: node,
                                        key: .init(algorithm: "Ed25519", id: key.id, publicKey: key.publicKey), made: now,
                                        files: files, missing: missing, bookmarks: bookmarks, audit: audit)
        let json = Array(try encoder.encode(manifest))
        let signature = Array((try key.sign(json) + "\n").utf8)
        for (name, bytes) in [(manifestName, json), (signatureName, signature)] {
            guard let header = Tar.header(name: "\(dir)/\(name)", size: bytes.count, mtime: mtime) else { return nil }
            try await emit(header)
            try await emit(bytes)
            try await emit(Tar.padding(after: bytes.count))
        }
        try await emit(Tar.end)
        return manifest
    }

    /// Why a bundle does not prove itself: one line, naming the file, the key or the piece.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        init(_ d: String) { description = EvidenceBundle.printable(d, limit: 600) }
    }

    /// Text from a bundle made fit for one line of a terminal: control characters as `?`, at
    /// most `limit` characters.
    public static func printable(_ text: String, limit: Int = 200) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.prefix(limit).map { $0.value < 0x20 || $0.value == 0x7F || (0x80..<0xA0).contains($0.value) ? "?" : $0 }))
    }

    /// The largest manifest read back (a 16-camera, one-hour incident's is a few MiB).
    static let largestManifest = 256 << 20

    /// Checks the bundle at `path` with the public key `publicKey` (base64, raw Ed25519) alone:
    /// the manifest's signature, then every file it lists (each piece's hash, the whole
    /// clip's, the chain links), and that the bundle holds nothing else.
    public static func verify(path: String, publicKey: String) -> Result<EvidenceManifest, Failure> {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path), let size = (attributes[.size] as? NSNumber)?.intValue else {
            return .failure(Failure("cannot read \(path)"))
        }
        return verify(length: size, publicKey: publicKey) { RecordingExport.read(path: path, offset: $0, count: $1) }
    }

    /// ``verify(path:publicKey:)`` on a bundle of `length` bytes read through `read(offset,
    /// count)` (nil: fewer bytes there).
    public static func verify(length size: Int, publicKey: String, read: (Int, Int) -> [UInt8]?) -> Result<EvidenceManifest, Failure> {
        let given = String(publicKey.trimmingASCIISpaces())
        guard let givenID = NodeKey.id(ofBase64: given) else {
            return .failure(Failure("the key is not an Ed25519 public key (32 bytes in base64)"))
        }
        let members: [Tar.Member]
        switch Tar.members(length: size, read: read) {
        case .success(let m): members = m
        case .failure(let e): return .failure(Failure("not a bundle: \(e)"))
        }
        // What `tar -xf` would write must be what is checked: plain files, each name once, none
        // outside the directory it is extracted in.
        if let odd = members.first(where: { !$0.isRegularFile }) {
            return .failure(Failure("an entry that is not a plain file: \(odd.name) (type \(Character(UnicodeScalar(odd.type))))"))
        }
        if let unsafe = members.first(where: { !$0.isPlainPath }) { return .failure(Failure("an entry named outside the bundle's directory: \(unsafe.name)")) }
        var names = Set<String>()
        for m in members where !names.insert(m.name).inserted { return .failure(Failure("a name twice: \(m.name)")) }
        guard let manifestMember = members.first(where: { $0.name.hasSuffix("/" + manifestName) }) else {
            return .failure(Failure("not a bundle: it has no \(manifestName)"))
        }
        let dir = String(manifestMember.name.dropLast(manifestName.utf8.count + 1))
        guard let signatureMember = members.first(where: { $0.name == dir + "/" + signatureName }) else {
            return .failure(Failure("the bundle has no signature (\(dir)/\(signatureName))"))
        }
        guard manifestMember.size <= largestManifest, signatureMember.size <= 1024,
              let json = read(manifestMember.offset, manifestMember.size), let sigBytes = read(signatureMember.offset, signatureMember.size) else {
            return .failure(Failure("cannot read the manifest and its signature"))
        }
        let signature = String(String(decoding: sigBytes, as: UTF8.self).trimmingASCIISpaces())
        guard NodeKey.verify(signature, of: json, publicKey: given) else {
            // Whose it is, if the key the manifest names made it (read only to say so).
            if let named = (try? decoder.decode(EvidenceManifest.self, from: Data(json)))?.key.publicKey, named != given,
               NodeKey.verify(signature, of: json, publicKey: named), let namedID = NodeKey.id(ofBase64: named) {
                return .failure(Failure("signed by another key: key \(namedID), not the key given (\(givenID))"))
            }
            return .failure(Failure("the manifest does not match its signature: it was changed after it was signed, or signed by another key"))
        }
        guard let manifest = try? decoder.decode(EvidenceManifest.self, from: Data(json)) else {
            return .failure(Failure("the manifest is signed but not readable as a \(format) manifest"))
        }
        guard manifest.format == format else { return .failure(Failure("the manifest's format is \(manifest.format.prefix(60)), not \(format)")) }
        var listed: Set<String> = [manifestMember.name, signatureMember.name]
        for file in manifest.files {
            let name = dir + "/" + file.name
            listed.insert(name)
            guard let member = members.first(where: { $0.name == name }) else { return .failure(Failure("missing: \(file.name) (\(file.stream))")) }
            if let problem = file.clip.check(size: member.size, read: { offset, count in
                guard offset >= 0, count >= 0, offset <= member.size - count else { return nil }
                return read(member.offset + offset, count)
            }) {
                return .failure(Failure("\(file.name): \(problem)"))
            }
        }
        if let extra = members.first(where: { !listed.contains($0.name) }) {
            return .failure(Failure("a file the manifest does not list: \(extra.name)"))
        }
        return .success(manifest)
    }
}
