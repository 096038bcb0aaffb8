/// The node of a fleet that reads a stream's source now.
public struct StreamOwner: Sendable, Equatable {
    public var node: String
    /// Its HTTP server (`node.url`), without a trailing slash.
    public var url: String
    /// Its RTSP server (`node.rtsp_url`); nil: it re-serves nothing by RTSP.
    public var rtspURL: String?

    public init(node: String, url: String, rtspURL: String?) {
        self.node = node
        self.url = url
        self.rtspURL = rtspURL
    }
}

/// Where each stream runs in a fleet: the engine asks it how to run a stream on this node (read
/// the camera, pull it from its owner on demand, or wait for an owner), and the servers ask it
/// which node answers for a stream. Without a fleet there is none, and every stream runs as
/// configured.
public protocol StreamPlacement: Sendable {
    /// How this node runs `stream` now (its configured settings in, what its hub runs out).
    func place(_ stream: Configuration.Stream) -> Configuration.Stream
    /// The other node that reads `stream`'s source; nil when this node does, or nobody does,
    /// or the stream is not placed (a publish stream lives where its publisher is).
    func remoteOwner(of stream: String) -> StreamOwner?
    /// The node that reads `stream`'s source as this node last heard (itself included); nil
    /// when none does or it is not placed.
    func owner(of stream: String) -> String?
    /// This node's name.
    var nodeName: String { get }
    /// The fleet's nodes and leases, read from the database now.
    func report() async throws -> FleetReport
    /// This node's fleet counters now (`/metrics`).
    var figures: FleetFigures { get }
}

/// What `/metrics` says of a fleet node.
public struct FleetFigures: Sendable, Equatable {
    /// Nodes whose heartbeat is within the lease time, this one included.
    public var liveNodes: Int
    /// Cameras this node reads.
    public var leasesHeld: Int
    /// Statements this node sent to the catalog (the fleet's traffic).
    public var catalogQueries: Int
    /// Leases `taken`, `renewed`, `handed` (to their first choice) and `lost` (not renewed in time).
    public var leaseEvents: [String: Int]

    public init(liveNodes: Int, leasesHeld: Int, catalogQueries: Int, leaseEvents: [String: Int]) {
        self.liveNodes = liveNodes
        self.leasesHeld = leasesHeld
        self.catalogQueries = catalogQueries
        self.leaseEvents = leaseEvents
    }
}

/// The fleet as its database has it now (`GET /api/fleet`): the same from every node.
public struct FleetReport: Sendable, Codable, Equatable {
    public struct NodeEntry: Sendable, Codable, Equatable {
        public var name: String
        public var url: String
        public var rtspURL: String?
        /// ISO 8601.
        public var lastHeartbeat: String
        /// Heartbeat within the lease time.
        public var live: Bool
        // `rtsp_url`, `last_heartbeat` on the wire (the API's encoder and decoder convert).
        enum CodingKeys: String, CodingKey {
            case name, url, live, lastHeartbeat
            case rtspURL = "rtspUrl"
        }
        public init(name: String, url: String, rtspURL: String?, lastHeartbeat: String, live: Bool) {
            self.name = name
            self.url = url
            self.rtspURL = rtspURL
            self.lastHeartbeat = lastHeartbeat
            self.live = live
        }
    }
    public struct LeaseEntry: Sendable, Codable, Equatable {
        public var stream: String
        public var node: String
        /// ISO 8601.
        public var until: String
        /// Times the stream moved to another node.
        public var moves: Int
        public init(stream: String, node: String, until: String, moves: Int) {
            self.stream = stream
            self.node = node
            self.until = until
            self.moves = moves
        }
    }
    /// The node that answered.
    public var node: String
    public var nodes: [NodeEntry]
    public var leases: [LeaseEntry]

    public init(node: String, nodes: [NodeEntry], leases: [LeaseEntry]) {
        self.node = node
        self.nodes = nodes
        self.leases = leases
    }
}
