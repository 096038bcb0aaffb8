import Foundation
import Glibc
import Relay
import Wire

/// The `onvif` target: the bytes are what an ONVIF camera answers. Directly: XMLTree and every
/// answer parser, the WS-Discovery match reader (answering the RelatesTo the bytes carry),
/// the profile choice and the discovery address rule. Then on a loopback socket: the bytes as
/// the HTTP body of every answer to LiveRelay's own client resolving the camera
/// (`ONVIFCameras.resolve`: capabilities, profiles, stream and snapshot URIs) and then asking
/// its PTZ status and presets, as `serve` and the PTZ API do.
enum ONVIFCameraFuzz {
    static func run(_ bytes: [UInt8]) {
        direct(bytes)
        overSocket(bytes)
    }

    static func direct(_ bytes: [UInt8]) {
        guard case .success(let root) = XMLTree.parse(bytes) else { _ = ONVIFAnswer.body(bytes); return }
        if case .success(let answer) = ONVIFAnswer.body(bytes) {
            _ = ONVIFAnswer.deviceInformation(answer)
            _ = ONVIFAnswer.systemTime(answer)
            _ = ONVIFAnswer.capabilities(answer)
            let profiles = ONVIFAnswer.profiles(answer)
            if let main = ONVIFCamera.choose(profiles, named: profiles.last?.name) { _ = ONVIFCamera.subProfile(of: main, in: profiles) }
            _ = ONVIFAnswer.streamURI(answer).map { ONVIFCameras.withCredentials($0.withoutCredentials, of: ONVIFURL("onvif://u:p@127.0.0.1")!) }
            _ = ONVIFAnswer.snapshotURI(answer)
            _ = ONVIFAnswer.presets(answer)
            _ = ONVIFAnswer.status(answer)
            _ = ONVIFAnswer.presetToken(answer)
        }
        let relates = root.path("Header", "RelatesTo")?.value ?? ""
        for m in WSDiscovery.matches(bytes, answering: relates) {
            _ = (m.name, m.hardware)
            _ = ONVIFDiscovery.deviceService(m.addresses, sender: "10.0.0.9")
        }
    }

    /// Answers every request on one loopback listener with the bytes (HTTP/1.1 200, closed
    /// after each), while the real client resolves the camera and asks its PTZ.
    static func overSocket(_ bytes: [UInt8]) {
        guard let (listener, port) = loopbackListener(backlog: 16) else { return }
        let answer = Array("HTTP/1.1 200 OK\r\nContent-Type: application/soap+xml\r\nContent-Length: \(bytes.count)\r\nConnection: close\r\n\r\n".utf8) + bytes
        let serverDone = DispatchSemaphore(value: 0)
        let server = Thread {
            defer { serverDone.signal() }
            // At most 8 requests: capabilities, profiles, two stream URIs, a snapshot URI, status, presets.
            for _ in 0..<8 {
                var p = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
                guard poll(&p, 1, 1500) == 1, p.revents & Int16(POLLIN) != 0 else { break }
                let c = accept(listener, nil, nil)
                guard c >= 0 else { break }
                var request = [UInt8](repeating: 0, count: 16_384)
                var cp = pollfd(fd: c, events: Int16(POLLIN), revents: 0)
                if poll(&cp, 1, 1000) == 1 { _ = recv(c, &request, request.count, 0) }
                var sent = 0
                while sent < answer.count {
                    let n = answer.withUnsafeBytes { send(c, $0.baseAddress! + sent, answer.count - sent, Int32(MSG_NOSIGNAL)) }
                    if n <= 0 { break }
                    sent += n
                }
                close(c)
            }
        }
        server.start()
        let done = DispatchSemaphore(value: 0)
        Task {
            let client = ONVIFClient(url: ONVIFURL("onvif://admin:secret@127.0.0.1:\(port)")!, timeout: 1)
            if case .success(let camera) = await ONVIFCameras.resolve(client, profile: nil), let service = camera.ptzService {
                let ptz = ONVIFClient.PTZ(service: service, profile: camera.main.token)
                _ = await client.position(ptz)
                _ = await client.presets(ptz)
            }
            done.signal()
        }
        _ = done.wait(timeout: .now() + 15)
        // Wakes the server's poll; the listener is closed once the server is done with it.
        shutdown(listener, Int32(SHUT_RDWR))
        serverDone.wait()
        close(listener)
    }
}
