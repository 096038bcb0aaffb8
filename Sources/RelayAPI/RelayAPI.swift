public import Foundation

/// The HTTP API's JSON, one way for both sides: the server encodes its answers with `encoder`,
/// tests, the bench and any Swift client decode them with `decoder`. Keys are snake_case on the
/// wire and camelCase in Swift; dates are RFC 3339 (whole seconds).
public enum RelayAPI {
    /// Answers as the server writes them: snake_case keys, sorted, `/` unescaped, ISO 8601 dates.
    public static var encoder: JSONEncoder {
        let e = JSONEncoder()
        e.keyEncodingStrategy = .convertToSnakeCase
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        e.dateEncodingStrategy = .iso8601
        return e
    }

    /// `/api/events`' `data:` lines: as `encoder`, with `/` escaped (as the stream has always
    /// written them).
    public static var eventEncoder: JSONEncoder {
        let e = encoder
        e.outputFormatting = .sortedKeys
        return e
    }

    /// Reads what `encoder` and `eventEncoder` write.
    public static var decoder: JSONDecoder {
        let d = JSONDecoder()
        d.keyDecodingStrategy = .convertFromSnakeCase
        d.dateDecodingStrategy = .iso8601
        return d
    }

    /// `data` as a `T`, read the API's way.
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try decoder.decode(type, from: data)
    }
}
