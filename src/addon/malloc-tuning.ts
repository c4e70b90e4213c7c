// The glibc malloc settings Skein's processes run with (native/src/malloc-tune.cc says what each does).
// Both keep freed memory for reuse instead of returning it to the kernel and faulting it in again:
// - the broker receives every request into fresh socket-read buffers (src/main.ts);
// - a client reading at full speed receives each Fetch response, megabytes, into one fresh buffer, which
//   glibc's defaults give back when it is freed (its own mmap, or a trimmed heap top): over a third of
//   `skein perf consume`'s CPU was system time, much of it page faults. Like Kafka's own tools get their JVM heap
//   settings from kafka-run-class, the skein tools (src/skein.ts) apply the client settings; a
//   library user's process keeps its own unless it calls tuneMallocForClient().
import { native } from './index.js'

const MiB = 1024 * 1024

/** Up to 256 MiB freed at the heap top stays mapped; the heap grows in 64 MiB steps. */
export function tuneMallocForBroker(): boolean {
  return native.mallocTune(256 * MiB, 64 * MiB)
}

/** As the broker, and allocations up to 32 MiB (Fetch responses) come from that heap instead of mmap. */
export function tuneMallocForClient(): boolean {
  return native.mallocTune(256 * MiB, 64 * MiB, 32 * MiB)
}
