import Testing

extension Tag {
    /// Starts `liverelay serve` or real servers and clients: seconds to a minute each. The fast
    /// run (`scripts/test.sh --fast`) leaves these targets out.
    @Tag static var endToEnd: Self
}
