import Relay
import StampedSource

extension SourceOpener {
    /// The program's sources: libavformat's, and the stamped `testsrc://` test source.
    static var liverelay: SourceOpener {
        var o = SourceOpener()
        o.register(scheme: StampedSource.scheme, open: StampedSource.open, validate: StampedSource.validate)
        return o
    }
}
