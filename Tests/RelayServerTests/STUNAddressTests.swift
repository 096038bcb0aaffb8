import Testing
import TestSupport
import NIOCore
@testable import WebRTC

/// The address a STUN binding reply reports back (XOR-MAPPED-ADDRESS) is read from NIO's socket
/// address by byte offset; these pin the offsets to the Linux layouts.
@Suite(.ownThreads, .tags(.fast)) struct STUNAddressTests {
    @Test func anIPv4AddressGivesItsFourBytesInNetworkOrder() throws {
        let a = try SocketAddress(ipAddress: "192.0.2.33", port: 50_000)
        #expect(WebRTCServer.ipBytes(a) == [192, 0, 2, 33])
    }

    @Test func anIPv6AddressGivesItsSixteenBytes() throws {
        let a = try SocketAddress(ipAddress: "2001:db8::7", port: 443)
        #expect(WebRTCServer.ipBytes(a) == [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [7])
    }
}
