// A probe preloaded into a broker process by the cluster latency benchmark (`node --import
// file://.../process-probe.js dist/src/main.js ...`), so that what a broker's own event loop suffers is
// measured from inside it without a line of broker code: every SKEIN_PROBE_INTERVAL_MS (default 1000) it
// appends one JSON line to the file named by SKEIN_PROBE_OUT with, for that window,
//   t          Date.now() at the end of the window
//   loop       event-loop delay p50 / p99 / max in ms (perf_hooks.monitorEventLoopDelay, 1 ms resolution:
//              how late timers and I/O callbacks ran: GC pauses, long synchronous work, or the process
//              waiting for a CPU)
//   gc         collections in the window, their total and longest pause in ms, by kind (minor = scavenge)
//   cpuMs      user + system CPU of the process in the window (process.cpuUsage)
// The file is created fresh; lines are appended with appendFileSync (one small write a second).
// Without SKEIN_PROBE_OUT the probe does nothing.
import { appendFileSync, writeFileSync } from 'node:fs'
import { constants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks'

const out = process.env.SKEIN_PROBE_OUT
if (out !== undefined && out !== '') {
  const intervalMs = Number(process.env.SKEIN_PROBE_INTERVAL_MS ?? 1000)
  writeFileSync(out, '')
  const loop = monitorEventLoopDelay({ resolution: 1 })
  loop.enable()
  const gc = { minor: 0, major: 0, other: 0, ms: 0, maxMs: 0 }
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = ((e as unknown as { detail?: { kind?: number } }).detail)?.kind
      if (kind === constants.NODE_PERFORMANCE_GC_MINOR) gc.minor++
      else if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) gc.major++
      else gc.other++
      gc.ms += e.duration
      if (e.duration > gc.maxMs) gc.maxMs = e.duration
    }
  })
  obs.observe({ entryTypes: ['gc'] })
  let cpu = process.cpuUsage()
  const timer = setInterval(() => {
    const c = process.cpuUsage(cpu)
    cpu = process.cpuUsage()
    const line = {
      t: Date.now(),
      loop: { p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
      gc: { ...gc },
      cpuMs: (c.user + c.system) / 1000,
    }
    loop.reset()
    gc.minor = gc.major = gc.other = gc.ms = gc.maxMs = 0
    appendFileSync(out, JSON.stringify(line) + '\n')
  }, intervalMs)
  timer.unref()
}
