import Testing
import Foundation
import Wire

@Suite("ustar archives", .tags(.fast))
struct TarTests {
    /// An archive of `files`, as EvidenceBundle writes one.
    static func archive(_ files: [(String, [UInt8])]) -> [UInt8] {
        var out: [UInt8] = []
        for (name, bytes) in files {
            out += Tar.header(name: name, size: bytes.count, mtime: 1_795_000_000)!
            out += bytes + Tar.padding(after: bytes.count)
        }
        return out + Tar.end
    }

    static func members(_ bytes: [UInt8]) -> Result<[Tar.Member], Tar.ReadError> {
        Tar.members(length: bytes.count) { offset, count in
            guard offset >= 0, count >= 0, offset <= bytes.count - count else { return nil }
            return Array(bytes[offset..<(offset + count)])
        }
    }

    @Test("Written members read back by name, offset and size; GNU tar lists and extracts them byte for byte")
    func roundTrip() throws {
        let files: [(String, [UInt8])] = [("incident-7/cam1.mp4", Array(repeating: 7, count: 1300)), ("incident-7/empty", []),
                                         ("incident-7/manifest.json", Array("{}".utf8)), ("incident-7/exact", Array(repeating: 1, count: 512))]
        let bytes = Self.archive(files)
        let members = try Self.members(bytes).get()
        #expect(members.map(\.name) == files.map(\.0))
        for (m, f) in zip(members, files) {
            #expect(m.size == f.1.count)
            #expect(Array(bytes[m.offset..<(m.offset + m.size)]) == f.1)
        }
        // The system's tar is the judge of the format.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tar-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("a.tar")
        try Data(bytes).write(to: file)
        let tar = Process()
        tar.executableURL = URL(fileURLWithPath: "/usr/bin/tar")
        tar.arguments = ["-xf", file.path, "-C", dir.path]
        try tar.run()
        tar.waitUntilExit()
        #expect(tar.terminationStatus == 0)
        for (name, content) in files {
            #expect(try Data(contentsOf: dir.appendingPathComponent(name)) == Data(content), "\(name)")
        }
    }

    @Test("Names that do not fit a header are refused")
    func names() {
        #expect(Tar.header(name: String(repeating: "a", count: 101), size: 1, mtime: 0) == nil)
        #expect(Tar.header(name: "", size: 1, mtime: 0) == nil)
        #expect(Tar.header(name: "a\u{0}b", size: 1, mtime: 0) == nil)
        #expect(Tar.header(name: String(repeating: "a", count: 100), size: 1, mtime: 0) != nil)
    }

    @Test("Hostile archives: a changed header, a size past the end or overflowing, a cut archive, noise — an error, never a trap")
    func hostile() {
        let good = Self.archive([("d/a.mp4", Array(repeating: 3, count: 600)), ("d/b", Array("xyz".utf8))])
        var flipped = good
        flipped[10] ^= 0x20 // the name: the checksum no longer matches
        #expect(Self.members(flipped) == .failure(.badHeader(at: 0, "its checksum does not match")))
        var huge = good
        // A size of 0o77777777777 with a checksum made to match.
        huge.replaceSubrange(124..<136, with: Array("77777777777\0".utf8))
        for i in 148..<156 { huge[i] = UInt8(ascii: " ") }
        let sum = huge[0..<512].reduce(0) { $0 + Int($1) }
        huge.replaceSubrange(148..<156, with: Array(String(format: "%06o", sum).utf8) + [0, 32])
        #expect(Self.members(huge) == .failure(.truncated(at: 0)))
        #expect(Self.members(Array(good.prefix(700))) == .failure(.truncated(at: 0)))
        var letters = good
        letters.replaceSubrange(124..<136, with: Array("9999999999 \0".utf8))
        if case .failure(.badHeader(0, _)) = Self.members(letters) {} else { Issue.record("a size in non-octal digits was read") }
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            var noise = good
            for _ in 0..<8 { noise[Int.random(in: 0..<noise.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng) }
            _ = Self.members(noise)
            _ = Self.members((0..<Int.random(in: 0..<2048, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        }
        #expect(Self.members([]) == .success([]))
        // Entries that are not plain files are listed with their type (a verifier refuses them),
        // and names outside the directory are told.
        var link = Tar.header(name: "../x", size: 0, mtime: 0)!
        link[156] = UInt8(ascii: "2")
        for i in 148..<156 { link[i] = UInt8(ascii: " ") }
        let linkSum = link.reduce(0) { $0 + Int($1) }
        link.replaceSubrange(148..<156, with: Array(String(format: "%06o", linkSum).utf8) + [0, 32])
        let listed = try? Self.members(link + Tar.end).get()
        #expect(listed?.count == 1 && listed?.first?.isRegularFile == false && listed?.first?.isPlainPath == false)
    }
}
