import Foundation
import PackagePlugin

/// Embeds text files of the target it is applied to as string constants, so that the binary
/// carries them and needs nothing beside it: `liverelay` is installed alone, and a resource
/// bundle (`Bundle.module`) is a directory that would have to travel with it.
///
/// Each file of `embeds` that the target's directory holds becomes
/// `extension TYPE { static let PROPERTY: String = … }` in `TYPE+Embedded.swift`, the file's
/// exact text as a raw string literal. The file is the command's input, so editing it runs the
/// command again and recompiles the target. The target excludes the file (`exclude:` in
/// Package.swift), so SwiftPM neither compiles it nor asks what it is; the plugin finds it by
/// name in the target's directory.
@main
struct EmbedText: BuildToolPlugin {
    struct Embed: Sendable {
        let file: String
        let type: String
        let property: String
    }

    /// What is embedded: a file in the target's directory, and the type and static property
    /// that hold its text.
    static let embeds: [Embed] = [
        // RelayServer: the API described, served at /api/openapi.json.
        Embed(file: "openapi.json", type: "OpenAPIDocument", property: "json"),
    ]

    struct NothingToEmbed: Error, CustomStringConvertible {
        let target: String
        var description: String {
            "EmbedText: \(target)'s directory holds none of \(EmbedText.embeds.map(\.file).joined(separator: ", "))"
        }
    }

    func createBuildCommands(context: PluginContext, target: any Target) async throws -> [Command] {
        // `Target.directoryURL` needs tools-version 6.1; the package says 6.0.
        let directory = URL(fileURLWithPath: target.directory.string)
        let found = Self.embeds.filter {
            FileManager.default.fileExists(atPath: directory.appendingPathComponent($0.file).path)
        }
        guard !found.isEmpty else { throw NothingToEmbed(target: target.name) }
        return found.map { embed -> Command in
            let input = directory.appendingPathComponent(embed.file)
            let output = context.pluginWorkDirectoryURL.appendingPathComponent("\(embed.type)+Embedded.swift")
            return .buildCommand(displayName: "Embedding \(embed.file) in \(target.name)",
                                 executable: URL(fileURLWithPath: "/bin/sh"),
                                 arguments: ["-c", Self.script, "embed-text", input.path, output.path, embed.type, embed.property],
                                 inputFiles: [input], outputFiles: [output])
        }
    }

    /// `sh -c script embed-text IN OUT TYPE PROPERTY`. SwiftPM runs it with an empty
    /// environment, hence PATH.
    ///
    /// The literal is `#…#"""`, a newline, the file's bytes, a newline, `"""#…#`: a multi-line
    /// literal drops the newline after its opening delimiter and the one before its closing
    /// delimiter, so it holds the file's text exactly, a final newline or not. Its `#`s are one
    /// more than the longest run of `#` in the file, so neither its closing delimiter nor an
    /// escape (`\#…#`) can occur in the text. A carriage return fails the build: Swift reads any
    /// line break in a multi-line literal as a line feed, so the text would not be the file's.
    static let script = ##"""
    in=$1 out=$2 type=$3 property=$4
    PATH=/usr/local/bin:/usr/bin:/bin${PATH:+:$PATH}
    export LC_ALL=C
    [ -r "$in" ] || { echo "$in: error: cannot read it" >&2; exit 1; }
    if grep -q "$(printf '\r')" "$in"; then
        echo "$in: error: a carriage return (CRLF line ends?): a Swift string literal would read it as a line feed" >&2
        exit 1
    fi
    hashes=$(tr -c '#' '\n' < "$in" | awk 'length($0) > n { n = length($0) } END { s = "#"; while (n-- > 0) s = s "#"; print s }') || exit 1
    {
        printf '// Written by the EmbedText plugin from %s: edit that file, not this one.\n' "${in##*/}"
        printf 'extension %s {\n    static let %s: String = %s"""\n' "$type" "$property" "$hashes"
        cat "$in"
        printf '\n"""%s\n}\n' "$hashes"
    } > "$out.tmp" && mv -f "$out.tmp" "$out"
    """##
}
