import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import Foundation
import Synchronization
import Wire

/// HTTP requests to a peer LiveRelay does not control (an HLS push origin, a JWKS endpoint),
/// through AsyncHTTPClient (SwiftNIO's parser: a malformed answer is an error, not a trap), with
/// every answer bounded: a deadline for the whole exchange, and a cap on the body kept (a peer
/// that sends more is cut off there, not buffered).
///
/// FoundationNetworking's URLSession, used here before, stops the process on some answers
/// (`Fatal error: Transfer completed, but there's no response`, found by the hostile push
/// origin with a few garbage bytes for an answer).
public enum BoundedHTTP {
    public struct Answer: Sendable {
        public let status: Int
        public let body: [UInt8]
        public var headers: [(String, String)] = []

        public init(status: Int, body: [UInt8], headers: [(String, String)] = []) {
            self.status = status
            self.body = body
            self.headers = headers
        }

        /// The first header of this name (any case).
        public func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
    }

    public enum Failure: Error, Sendable, CustomStringConvertible {
        /// No connection, a reset, a malformed answer.
        case transport(String)
        case timedOut(seconds: Double)
        /// The body went past the cap.
        case tooLarge(limit: Int)
        public var description: String {
            switch self {
            case .transport(let s): s
            case .timedOut(let s): "no answer within \(s) s"
            case .tooLarge(let l): "answer larger than \(l) bytes"
            }
        }
    }

    /// A client that answers a redirect with the redirect: for requests that carry a secret
    /// meant for that host alone (ONVIF's signed SOAP).
    static let withoutRedirects = HTTPClient(eventLoopGroupProvider: .singleton,
                                             configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))

    /// Sends one request from a task; at most `timeout` seconds for the whole exchange.
    /// `followRedirects: false` gives a 3xx answer back as it is.
    public static func send(method: String, url: String, headers: [(String, String)] = [], body: [UInt8]? = nil,
                            timeout: Double, maxBody: Int, followRedirects: Bool = true) async -> Result<Answer, Failure> {
        var request = HTTPClientRequest(url: url)
        request.method = HTTPMethod(rawValue: method)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        do {
            let client = followRedirects ? HTTPClient.shared : withoutRedirects
            let response = try await client.execute(request, timeout: .milliseconds(Int64(saturating: timeout * 1000)))
            do {
                let bytes = try await response.body.collect(upTo: maxBody)
                return .success(Answer(status: Int(response.status.code), body: Array(bytes.readableBytesView),
                                       headers: response.headers.map { ($0.name, $0.value) }))
            } catch is NIOTooManyBytesError {
                return .failure(.tooLarge(limit: maxBody))
            }
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            return .failure(.timedOut(seconds: timeout))
        } catch {
            return .failure(.transport(String(describing: error).prefix(300).description))
        }
    }

    /// Sends one request and waits for it on the caller's thread (an output's worker thread,
    /// never a task's): at most `timeout` seconds, plus a second's grace for the answer to land.
    public static func sendWaiting(method: String, url: String, headers: [(String, String)] = [], body: [UInt8]? = nil,
                                   timeout: Double, maxBody: Int) -> Result<Answer, Failure> {
        let result = Mutex<Result<Answer, Failure>?>(nil)
        let finished = DispatchSemaphore(value: 0)
        let task = Task {
            let r = await send(method: method, url: url, headers: headers, body: body, timeout: timeout, maxBody: maxBody)
            result.withLock { $0 = r }
            finished.signal()
        }
        if finished.wait(timeout: .now() + timeout + 1) == .timedOut {
            task.cancel()
            return .failure(.timedOut(seconds: timeout))
        }
        return result.withLock { $0 } ?? .failure(.transport("no answer"))
    }
}
