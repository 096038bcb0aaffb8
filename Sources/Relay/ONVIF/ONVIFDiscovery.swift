import Foundation
import Glibc
public import Wire

/// WS-Discovery for ONVIF cameras: one Probe to the multicast group (or one address), the
/// answers that relate to it gathered until the deadline. Bounded against a flood: at most
/// 4,096 datagrams read and 256 devices kept, one per address. Each device is reached at the
/// address its answer came from: an XAddr naming another host is moved to the sender's (a
/// forged match cannot point LiveRelay, and later the camera's credentials, elsewhere).
public enum ONVIFDiscovery {
    public struct Device: Sendable, Equatable {
        /// The device service, on the sender's address.
        public var deviceService: String
        /// The address the answer came from.
        public var sender: String
        public var match: WSDiscovery.Match
    }

    public enum Failure: Error, Sendable, CustomStringConvertible {
        case socket(String)
        public var description: String {
            switch self { case .socket(let s): "WS-Discovery: \(s)" }
        }
    }

    public static let maxDatagrams = 4096
    public static let maxDevices = 256

    /// Probes `destination` (the group, or a camera's address) from the interface with address
    /// `interface`, and waits `seconds` for answers.
    public static func probe(destination: String = WSDiscovery.group, interface: String? = nil, port: UInt16 = WSDiscovery.port,
                             seconds: Double) -> Result<[Device], Failure> {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(.socket("no socket: errno \(errno)")) }
        defer { close(fd) }
        // A site's cameras answer at once; the default 208 KB buffer holds about a hundred answers
        // (the kernel caps this at net.core.rmem_max).
        var receiveBuffer: Int32 = 4 << 20
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, socklen_t(MemoryLayout<Int32>.size))
        var ttl: UInt8 = 1
        _ = setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_TTL, &ttl, socklen_t(MemoryLayout<UInt8>.size))
        if let interface {
            var address = in_addr()
            guard inet_pton(AF_INET, interface, &address) == 1 else { return .failure(.socket("interface \(interface) is not an IPv4 address")) }
            guard setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_IF, &address, socklen_t(MemoryLayout<in_addr>.size)) == 0 else {
                return .failure(.socket("cannot send from \(interface): errno \(errno)"))
            }
        }
        var to = sockaddr_in()
        to.sin_family = sa_family_t(AF_INET)
        to.sin_port = port.bigEndian
        guard inet_pton(AF_INET, destination, &to.sin_addr) == 1 else { return .failure(.socket("destination \(destination) is not an IPv4 address")) }
        let messageID = "urn:uuid:\(UUID().uuidString.lowercased())"
        let probe = WSDiscovery.probe(messageID: messageID)
        let sent = probe.withUnsafeBytes { b in
            withUnsafePointer(to: &to) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, b.baseAddress, b.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        guard sent == probe.count else { return .failure(.socket("probe not sent to \(destination): \(String(cString: strerror(errno)))")) }
        let deadline = Date().addingTimeInterval(seconds)
        var devices: [Device] = []
        var seen = Set<String>()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var datagrams = 0
        while datagrams < maxDatagrams, devices.count < maxDevices {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { break }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(max(1, min(left * 1000, 60_000)))) == 1 else { continue }
            var from = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let n = buffer.withUnsafeMutableBytes { b in
                withUnsafeMutablePointer(to: &from) { f in
                    f.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, b.baseAddress, b.count, 0, $0, &length) }
                }
            }
            datagrams += 1
            guard n > 0 else { continue }
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            guard inet_ntop(AF_INET, &from.sin_addr, &text, socklen_t(INET_ADDRSTRLEN)) != nil else { continue }
            let sender = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            for match in WSDiscovery.matches(Array(buffer[0..<n]), answering: messageID) {
                guard let service = deviceService(match.addresses, sender: sender) else { continue }
                // One device per address: a flood of made-up endpoints, ports and paths from one sender is one device.
                guard seen.insert(sender).inserted, devices.count < maxDevices else { continue }
                devices.append(Device(deviceService: service, sender: sender, match: match))
            }
        }
        return .success(devices)
    }

    /// The XAddr on the sender's host if there is one, else the first moved to the sender's host.
    public static func deviceService(_ addresses: [String], sender: String) -> String? {
        let onSender = addresses.first { a in
            guard let u = ONVIFURL("onvif://" + hostPort(a)) else { return false }
            return u.host == sender
        }
        let chosen = onSender ?? addresses.first
        guard let chosen, let u = ONVIFURL("onvif://" + hostPort(chosen)) else { return nil }
        return ONVIFURL("onvif://\(sender):\(u.port)")?.sameHost(chosen)
    }

    /// `host[:port]` of an http(s) URL.
    public static func hostPort(_ url: String) -> Substring {
        guard let r = url.utf8Range(of: "://") else { return "" }
        let rest = url[r.upperBound...]
        return rest[..<(rest.utf8.firstIndex(where: { $0 == 0x2F || $0 == 0x3F || $0 == 0x23 }) ?? rest.endIndex)]
    }
}
