public import Yams

/// A configuration value as a JSON body carries it (the API's stream bodies): decoded without
/// `Any`, and read by the same section parsers as the file, key for key.
public indirect enum ConfigValue: Codable, Sendable, Hashable {
    case string(String)
    /// A number as written (integers keep every digit).
    case number(String)
    case bool(Bool)
    case list([ConfigValue])
    case object([String: ConfigValue])
    case null

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let i = try? c.decode(Int64.self) { self = .number(String(i)) }
        else if let d = try? c.decode(Double.self) { self = .number(d.description) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let l = try? c.decode([ConfigValue].self) { self = .list(l) }
        else { self = .object(try c.decode([String: ConfigValue].self)) }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .string(let s): try c.encode(s)
        case .number(let n):
            // As written: an integer as one, a finite number as a double, anything else as text.
            let integer = Int64(n)
            let real = Double(n).flatMap { $0.isFinite ? $0 : nil }
            if let integer { try c.encode(integer) } else if let real { try c.encode(real) } else { try c.encode(n) }
        case .bool(let b): try c.encode(b)
        case .list(let l): try c.encode(l)
        case .object(let o): try c.encode(o)
        case .null: try c.encodeNil()
        }
    }

    /// The value as the configuration file's parser reads it.
    public var node: Node {
        switch self {
        case .string(let s): return Node(s)
        case .number(let n): return Node(n)
        case .bool(let b): return Node(b ? "true" : "false")
        case .null: return Node("null")
        case .list(let l): return .sequence(Node.Sequence(l.map(\.node)))
        case .object(let o):
            return .mapping(Node.Mapping(o.sorted { $0.key < $1.key }.map { (Node($0.key), $0.value.node) }))
        }
    }
}
