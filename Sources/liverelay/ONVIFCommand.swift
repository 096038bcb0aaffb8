import ArgumentParser
import Foundation
import Relay
import Wire

/// `liverelay onvif discover`: the ONVIF cameras on a network, and what a stream entry for
/// each would be.
struct ONVIFCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "onvif",
        abstract: "ONVIF cameras: find them on the network and list their profiles and stream URIs.",
        subcommands: [Discover.self]
    )

    struct Discover: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send a WS-Discovery probe and list each camera that answers: name, model, profiles, stream URIs.",
            discussion: """
            Profiles and stream URIs need the cameras' credentials: --user, and the password in \
            LIVERELAY_ONVIF_PASSWORD (or --password). Without them, or when a camera refuses them, \
            the camera is listed with the reason. --yaml prints stream entries for a config file \
            (`source: onvif://USER:PASSWORD@…/PROFILE`; the password is never printed).
            """
        )

        @Option(help: "Seconds to wait for answers.")
        var timeout: Double = 2
        @Option(help: "The IPv4 address of the interface to probe from (multicast leaves by it).")
        var interface: String?
        @Option(name: .customLong("to"), help: "Where the probe goes: the WS-Discovery group, or one camera's address.")
        var destination: String = WSDiscovery.group
        @Option(help: "The cameras' user name (profiles and stream URIs need it).")
        var user: String?
        @Option(help: "The cameras' password (prefer LIVERELAY_ONVIF_PASSWORD: a command line is seen by every user of the machine).")
        var password: String?
        @Flag(help: "Print stream entries for a config file instead of the list.")
        var yaml = false

        func run() async throws {
            guard timeout > 0, timeout <= 60 else { throw ValidationError("--timeout must be between 0 and 60 seconds") }
            let devices: [ONVIFDiscovery.Device]
            switch ONVIFDiscovery.probe(destination: destination, interface: interface, seconds: timeout) {
            case .success(let d): devices = d
            case .failure(let e): throw ValidationError("\(e)")
            }
            let secret = password ?? ProcessInfo.processInfo.environment["LIVERELAY_ONVIF_PASSWORD"]
            if devices.isEmpty {
                FileHandle.standardError.write(Data("no ONVIF camera answered within \(timeout) s (to \(destination)\(interface.map { " from \($0)" } ?? ""))\n".utf8))
                throw ExitCode(1)
            }
            var names = Set<String>()
            if yaml { print("streams:") }
            // Every camera asked at once: one slow or hostile camera does not hold up the list.
            let user = user
            let asked = await withTaskGroup(of: (Int, ONVIFURL, Result<ONVIFAnswer.DeviceInformation, ONVIFError>, Result<ONVIFCamera, ONVIFError>)?.self) { group in
                for (index, device) in devices.enumerated() {
                    let timeout = min(timeout * 2, 5)
                    group.addTask {
                        guard let host = ONVIFURL("onvif://" + ONVIFDiscovery.hostPort(device.deviceService)) else { return nil }
                        let credentials = user.map { "\(RTSPURL.percentEncoded($0)):\(RTSPURL.percentEncoded(secret ?? ""))@" } ?? ""
                        guard let address = ONVIFURL("onvif://\(credentials)\(host.authority)") else { return nil }
                        let client = ONVIFClient(url: address, timeout: timeout)
                        return (index, host, await client.deviceInformation(), await ONVIFCameras.resolve(client, profile: nil))
                    }
                }
                var all: [(Int, ONVIFURL, Result<ONVIFAnswer.DeviceInformation, ONVIFError>, Result<ONVIFCamera, ONVIFError>)] = []
                for await a in group { if let a { all.append(a) } }
                return all.sorted { $0.0 < $1.0 }
            }
            for (index, host, info, camera) in asked {
                let device = devices[index]
                let title = [(try? info.get()).map { "\($0.manufacturer) \($0.model)" }, device.match.name, device.match.hardware]
                    .compactMap { $0 }.first { !$0.trimmingASCIISpaces().isEmpty } ?? host.authority
                if yaml {
                    var name = Self.slug(title)
                    while !names.insert(name).inserted { name += "-2" }
                    let user = user.map { "\(RTSPURL.percentEncoded($0)):PASSWORD@" } ?? ""
                    switch camera {
                    case .success(let c):
                        print("  \(name):")
                        print("    source: \"onvif://\(user)\(host.authority)/\(RTSPURL.percentEncoded(c.main.token))\"   # \(Self.describe(c.main))")
                        if let sub = c.sub, let uri = c.subURI { print("    # sub stream: \(Self.describe(sub)) at \(uri)") }
                    case .failure(let e):
                        print("  # \(name): \(device.deviceService): \(e.detail)")
                    }
                    continue
                }
                print("\(device.deviceService)  \(title)")
                switch info {
                case .success(let i): print("  model: \(i.manufacturer) \(i.model), firmware \(i.firmware), serial \(i.serial)")
                case .failure(let e): print("  device information: \(e.detail)")
                }
                switch camera {
                case .success(let c):
                    for p in c.profiles {
                        let role = p.token == c.main.token ? "main" : (p.token == c.sub?.token ? "sub" : "")
                        let uri = p.token == c.main.token ? c.mainURI : (p.token == c.sub?.token ? c.subURI ?? "" : "")
                        print("  profile \(p.token) (\(p.name)) \(Self.describe(p))\(role.isEmpty ? "" : " [\(role)]")\(uri.isEmpty ? "" : " \(uri)")")
                    }
                    if let s = c.snapshotURI { print("  snapshot: \(s)") }
                    print("  ptz: \(c.ptzService == nil ? "no" : "yes")")
                case .failure(let e):
                    print("  profiles: \(e.detail)\(e.notAuthorized && user == nil ? " (give --user and LIVERELAY_ONVIF_PASSWORD)" : "")")
                }
            }
        }

        static func describe(_ p: ONVIFAnswer.Profile) -> String {
            var parts: [String] = []
            if let e = p.encoding { parts.append(e) }
            if let w = p.width, let h = p.height { parts.append("\(w)x\(h)") }
            if let f = p.fps { parts.append("\(f) fps") }
            if p.ptz { parts.append("PTZ") }
            return parts.joined(separator: " ")
        }

        /// A stream name from a camera's name: lower-case letters, digits and dashes.
        static func slug(_ s: String) -> String {
            var out = ""
            for u in s.lowercased().unicodeScalars {
                if (u >= "a" && u <= "z") || (u >= "0" && u <= "9") { out.unicodeScalars.append(u) } else if !out.hasSuffix("-") && !out.isEmpty { out += "-" }
            }
            while out.hasSuffix("-") { out.removeLast() }
            return out.isEmpty ? "camera" : String(out.prefix(48))
        }
    }
}
