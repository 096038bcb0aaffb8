public import Foundation

/// Real servers the tests start on free ports: gst-rtsp-server and nginx with the RTMP module.
public enum Servers {
    public static let python = "/usr/bin/python3"
    public static let nginx = "/usr/sbin/nginx"
    public static let rtmpModule = "/usr/lib/nginx/modules/ngx_rtmp_module.so"

    /// An RTSP server serving the default mount `/test` (a live x264 test pattern, 640x360 at
    /// 30 fps), or the mounts given as `path=launch-line`.
    public final class RTSP: @unchecked Sendable {
        // Safety: immutable after init.
        public let port: Int
        public let child: ChildProcess

        /// `arguments`: more of rtsp_server.py's (`--auth user:pass`, `--digest`).
        public init(mounts: [String] = [], records: [String] = [], port: Int? = nil, arguments: [String] = []) throws {
            try FastRun.refuse("gst-rtsp-server (scripts/rtsp_server.py)")
            self.port = port ?? FreePort.tcp()
            var args = [Paths.packageRoot.appendingPathComponent("scripts/rtsp_server.py").path, "--port", String(self.port)]
            for m in mounts { args += ["--mount", m] }
            for r in records { args += ["--record", r] }
            args += arguments
            child = try ChildProcess(Servers.python, args)
            guard child.waitFor("ready", timeout: 15) else {
                child.stop()
                throw ServerError("gst-rtsp-server did not start: \(child.stderr)")
            }
        }

        public func url(_ path: String = "/test") -> String { "rtsp://127.0.0.1:\(port)\(path)" }
        deinit { child.stop() }

        /// A camera with sound, as IP cameras send it: x264 320x180 at 30 fps (GOP 1 s) and a
        /// 440 Hz tone in AAC, at `/av`.
        public static let aacCameraMount = "/av=( videotestsrc is-live=true ! video/x-raw,width=320,height=180,framerate=30/1 ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=30 ! rtph264pay name=pay0 pt=96  audiotestsrc is-live=true wave=sine freq=440 volume=0.5 ! audioconvert ! avenc_aac ! rtpmp4gpay name=pay1 pt=97 )"
    }

    /// nginx with libnginx-mod-rtmp: application `live`.
    public final class NginxRTMP: @unchecked Sendable {
        // Safety: immutable after init.
        public let port: Int
        public let directory: URL
        public let child: ChildProcess

        public init(extraApplication: String = "", port: Int? = nil) throws {
            try FastRun.refuse("nginx-rtmp")
            self.port = port ?? FreePort.tcp()
            directory = Paths.tempDirectory("nginx")
            try FileManager.default.createDirectory(at: directory.appendingPathComponent("logs"), withIntermediateDirectories: true)
            let conf = """
            load_module \(Servers.rtmpModule);
            daemon off;
            master_process off;
            pid \(directory.path)/nginx.pid;
            error_log \(directory.path)/logs/error.log;
            events { worker_connections 256; }
            rtmp { server { listen 127.0.0.1:\(self.port); chunk_size 4096;
              application live { live on; \(extraApplication) } } }
            """
            let confPath = directory.appendingPathComponent("nginx.conf")
            try conf.write(to: confPath, atomically: true, encoding: .utf8)
            child = try ChildProcess(Servers.nginx, ["-c", confPath.path, "-p", directory.path])
            guard FreePort.waitUntilListening(self.port, timeout: 10) else {
                child.stop()
                throw ServerError("nginx-rtmp did not start: \(child.stderr)")
            }
        }

        public func url(_ stream: String) -> String { "rtmp://127.0.0.1:\(port)/live/\(stream)" }
        deinit {
            child.stop()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// stunnel (Debian's stunnel4): TLS on `port` in front of a plain TCP server on `backend`,
    /// with the certificate and key given (an RTMPS endpoint in front of nginx-rtmp, as
    /// platforms terminate it).
    public final class Stunnel: @unchecked Sendable {
        // Safety: immutable after init.
        public let port: Int
        public let directory: URL
        public let child: ChildProcess

        public init(backend: Int, cert: String, key: String, port: Int? = nil) throws {
            try FastRun.refuse("stunnel")
            self.port = port ?? FreePort.tcp()
            directory = Paths.tempDirectory("stunnel")
            let conf = directory.appendingPathComponent("stunnel.conf")
            try """
            foreground = yes
            pid =
            output = \(directory.path)/stunnel.log
            [tls]
            accept = 127.0.0.1:\(self.port)
            connect = 127.0.0.1:\(backend)
            cert = \(cert)
            key = \(key)
            """.write(to: conf, atomically: true, encoding: .utf8)
            child = try ChildProcess("/usr/bin/stunnel4", [conf.path])
            guard FreePort.waitUntilListening(self.port, timeout: 10) else {
                child.stop()
                throw ServerError("stunnel did not start: \(child.stderr)")
            }
        }

        deinit {
            child.stop()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// nginx as an HTTP origin that takes PUT and DELETE (WebDAV), and serves what it got.
    public final class NginxOrigin: @unchecked Sendable {
        // Safety: immutable after init.
        public let port: Int
        public let directory: URL
        public let root: URL
        public let child: ChildProcess

        public init() throws {
            try FastRun.refuse("nginx (an HTTP origin)")
            port = FreePort.tcp()
            directory = Paths.tempDirectory("origin")
            root = directory.appendingPathComponent("www")
            try FileManager.default.createDirectory(at: directory.appendingPathComponent("logs"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            let conf = """
            daemon off;
            master_process off;
            pid \(directory.path)/nginx.pid;
            error_log \(directory.path)/logs/error.log;
            events { worker_connections 256; }
            http {
              access_log \(directory.path)/logs/access.log;
              client_body_temp_path \(directory.path)/body;
              types { application/vnd.apple.mpegurl m3u8; video/mp2t ts; video/mp4 mp4; video/iso.segment m4s; }
              server { listen 127.0.0.1:\(port);
                location / { root \(root.path); dav_methods PUT DELETE; create_full_put_path on; client_max_body_size 64m; }
              }
            }
            """
            let confPath = directory.appendingPathComponent("nginx.conf")
            try conf.write(to: confPath, atomically: true, encoding: .utf8)
            child = try ChildProcess(Servers.nginx, ["-c", confPath.path, "-p", directory.path])
            guard FreePort.waitUntilListening(port, timeout: 10) else {
                child.stop()
                throw ServerError("nginx origin did not start: \(child.stderr)")
            }
        }

        public func url(_ path: String) -> String { "http://127.0.0.1:\(port)/\(path)" }
        public var accessLog: String { (try? String(contentsOf: directory.appendingPathComponent("logs/access.log"), encoding: .utf8)) ?? "" }
        deinit {
            child.stop()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    public struct ServerError: Error, CustomStringConvertible {
        public let description: String
        public init(_ d: String) { description = d }
    }
}

extension Servers {
    /// `liverelay serve` with this configuration, written into `dir` (a new temporary directory
    /// when nil), on loopback port `listen` (0: the kernel picks one, read back from the banner;
    /// a fleet node advertises its configured port, so fleet tests name one); returns once it
    /// listens.
    /// `namespace`: run inside that network namespace (`ip netns exec`).
    public static func serve(_ yaml: String, dir: URL? = nil, listen: Int = 0, arguments: [String] = [],
                             namespace: String? = nil) throws -> (child: ChildProcess, port: Int, dir: URL) {
        try FastRun.refuse("`liverelay serve`")
        let dir = dir ?? Paths.tempDirectory("serve")
        let file = dir.appendingPathComponent("config.yaml")
        try yaml.write(to: file, atomically: true, encoding: .utf8)
        let command = ["serve", "--config", file.path, "--listen", "127.0.0.1:\(listen)", "--state-dir", dir.path] + arguments
        let child = try namespace.map { try ChildProcess("/usr/sbin/ip", ["netns", "exec", $0, Paths.liverelay] + command) }
            ?? ChildProcess(Paths.liverelay, command)
        guard let port = child.listeningPort("LiveRelay listening on", timeout: 30) else {
            child.stop(); throw ServerError("serve did not start: \(child.stderr)")
        }
        return (child, port, dir)
    }
}

extension Servers {
    /// `serve` (above), and the port of another of its listeners (`listener`: "RTMP ingest",
    /// "SRT ingest", "RTSP server"), each configured on port 0 and read back from its banner.
    public static func serve(_ yaml: String, dir: URL? = nil, listener: String) throws -> (child: ChildProcess, port: Int, dir: URL, listener: Int) {
        let (child, port, dir) = try serve(yaml, dir: dir)
        guard let other = child.listeningPort("\(listener) listening on", timeout: 30) else {
            child.stop(); throw ServerError("no \(listener): \(child.stderr.suffix(500))")
        }
        return (child, port, dir, other)
    }
}

extension Servers {
    /// A self-signed certificate for localhost and 127.0.0.1 (two days), written into `dir` as
    /// `NAME-c.pem` and `NAME-k.pem`; returns their paths.
    public static func selfSignedCertificate(in dir: URL, name: String = "localhost") throws -> (cert: String, key: String) {
        try FastRun.refuse("openssl")
        let cert = dir.appendingPathComponent("\(name)-c.pem").path, key = dir.appendingPathComponent("\(name)-k.pem").path
        let r = try ChildProcess.run("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2",
                                                          "-subj", "/CN=\(name)", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], timeout: 30)
        guard r.status == 0 else { throw ServerError("openssl: \(r.stderr)") }
        return (cert, key)
    }
}

extension Servers {
    /// nginx with the shipped edge configuration in front of a LiveRelay origin.
    public static func nginxEdge(origin: Int) throws -> NginxEdge {
        try FastRun.refuse("nginx (the edge)")
        return try NginxEdge(origin: origin, shipped: Paths.packageRoot.appendingPathComponent("dist/nginx/liverelay-edge.conf"))
    }
}

extension Servers {
    /// An ONVIF camera as a VMS finds one: ipycam's own ONVIF services (scripts/onvif_camera.py,
    /// from setup's venv; user `admin`, password `password` when given) whose profiles point at a
    /// gst-rtsp-server beside it with `/main` 640x360 and `/sub` 320x180 at 30 fps.
    public final class ONVIFCamera: @unchecked Sendable {
        // Safety: immutable after init.
        public static let python = "/opt/liverelay-venv/bin/python"
        public let rtsp: RTSP
        public let port: Int
        public let child: ChildProcess
        public let directory: URL

        public static func mount(_ path: String, _ width: Int, _ height: Int) -> String {
            "\(path)=( videotestsrc is-live=true ! video/x-raw,width=\(width),height=\(height),framerate=30/1 ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=30 ! rtph264pay name=pay0 pt=96 config-interval=1 )"
        }

        public init(password: String?) throws {
            try FastRun.refuse("ipycam (scripts/onvif_camera.py)")
            guard FileManager.default.isExecutableFile(atPath: Self.python) else {
                throw ServerError("no \(Self.python): scripts/setup.sh makes the venv with ipycam")
            }
            rtsp = try RTSP(mounts: [Self.mount("/main", 640, 360), Self.mount("/sub", 320, 180)])
            port = FreePort.tcp()
            directory = Paths.tempDirectory("onvif-camera")
            let script = Paths.packageRoot.appendingPathComponent("scripts/onvif_camera.py").path
            var command = "cd '\(directory.path)' && exec \(Self.python) '\(script)' --http-port \(port) --rtsp-port \(rtsp.port)"
            if let password { command += " --user admin --password '\(password)'" }
            child = try ChildProcess("/bin/sh", ["-c", command])
            guard child.waitFor("http://", timeout: 20) else {
                child.stop()
                throw ServerError("the ONVIF camera did not start: \(child.stderr.suffix(800))")
            }
        }

        /// `onvif://user:password@127.0.0.1:PORT/profile`.
        public func url(user: String = "admin", password: String?, profile: String = "") -> String {
            "onvif://\(user):\(password ?? "")@127.0.0.1:\(port)/\(profile)"
        }

        deinit {
            child.stop()
            try? FileManager.default.removeItem(at: directory)
        }
    }
}
