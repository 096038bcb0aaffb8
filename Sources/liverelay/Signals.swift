import Foundation
import Dispatch

/// SIGINT/SIGTERM handling for commands that run until stopped.
enum Signals {
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []

    static func onTerminate(_ body: @escaping @Sendable () -> Void) {
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let s = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            s.setEventHandler(handler: body)
            s.resume()
            sources.append(s)
        }
    }
}
