import MediaCore

/// State only the stream's producer touches.
///
/// Safety: written and read only by SourceSupervisor's events: on the stream's ingest thread,
/// or, for a pushing source (a one-port RTMP publisher), on the publisher's event loop while
/// the ingest thread waits; one at a time, ordered by the source's lock.
final class IngestState: @unchecked Sendable {
    var epoch: IngestEpoch?
    var damaged = false

    func reset(streams: [StreamInfo], generation: Int) {
        epoch = IngestEpoch(generation: generation, streams: streams)
    }
}
