/// Every refusal's body: `{"error": "…"}`.
public struct APIError: Sendable, Codable, Equatable {
    /// What went wrong, for a person.
    public var error: String

    public init(error: String) {
        self.error = error
    }
}
