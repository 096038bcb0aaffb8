internal import CFFmpeg
import Foundation

/// How the process allocates, for a long-running server.
public enum MemoryTuning {
    /// HLS segments and parts (100 KB–1 MB each) live seconds and are freed in a different order
    /// than made. glibc raises its mmap threshold past them after the first is freed, so later
    /// ones come from the heap and its arenas, where the holes they leave stay resident: 0.85 MiB
    /// per 1 Mbit/s stream in steady state (`bench ingest --publishers 64 --seconds 40`). A fixed
    /// threshold gives every buffer of 128 KiB or more its own mapping, returned when freed, at no
    /// measurable CPU (the same bench). An explicit `MALLOC_MMAP_THRESHOLD_` in the environment wins.
    public static func keepLargeBuffersOutOfTheHeap() {
        guard ProcessInfo.processInfo.environment["MALLOC_MMAP_THRESHOLD_"] == nil else { return }
        _ = mallopt(M_MMAP_THRESHOLD, 128 * 1024)
    }
}
