// The machine a benchmark ran on and its raw limits, measured in the same run so the broker's figures
// can be read against them: sequential disk write/read of the data directory (`skein bench disk`) and
// loopback TCP bandwidth (one connection, 1 MiB writes, into a sink in a child process so that sender
// and receiver get a core each, as a client and the broker do).
import { execFileSync, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { availableParallelism, cpus, release, totalmem } from 'node:os'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { SKEIN_JS } from './broker-process.js'
import { runNode } from './run.js'

export interface MachineInfo {
  cpu: string
  cores: number
  memoryGiB: number
  disk: string
  kernel: string
  node: string
  date: string
}

function sh(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 }).trim()
  } catch {
    return ''
  }
}

export function machineInfo(dataParent: string): MachineInfo {
  // `df` names the device and filesystem of the directory the logs are written to.
  const df = sh('df', ['-hT', dataParent]).split('\n')[1]?.split(/\s+/) ?? []
  const device = df[0] ?? 'unknown'
  const dev = device.replace(/^\/dev\//, '')
  let rotational = ''
  try {
    rotational = readFileSync(`/sys/block/${dev}/queue/rotational`, 'utf8').trim() === '1' ? ', reported rotational (virtual disk)' : ', non-rotational'
  } catch {
    rotational = ''
  }
  return {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: availableParallelism(),
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    disk: `${device} ${df[1] ?? ''} ${df[2] ?? ''}${rotational}`.trim(),
    kernel: `${sh('uname', ['-sm'])} ${release()}`,
    node: process.version,
    date: new Date().toISOString(),
  }
}

export interface DiskLimits {
  writeMBps: number
  readMBps: number
  readMode: string
  fsyncsPerSec: number
}

/** `skein bench disk --dir <dir> --json`: the disk's own sequential bandwidth. */
export async function diskLimits(dir: string, sizeMb: number): Promise<DiskLimits> {
  const out = await runNode([SKEIN_JS, 'bench', 'disk', '--dir', dir, '--size-mb', String(sizeMb), '--fsyncs', '100', '--json'], 120000)
  const r = JSON.parse(lastJsonLine(out)) as DiskLimits
  return { writeMBps: r.writeMBps, readMBps: r.readMBps, readMode: r.readMode, fsyncsPerSec: r.fsyncsPerSec }
}

export function lastJsonLine(out: string): string {
  const line = out.trim().split('\n').reverse().find((l) => l.startsWith('{'))
  if (line === undefined) throw new Error(`no JSON line in output:\n${out.slice(-2000)}`)
  return line
}

const SINK_JS = join(dirname(fileURLToPath(import.meta.url)), 'tcp-sink.js')

/** Loopback TCP bandwidth in MB/s (MiB): one connection writing 1 MiB buffers for `seconds`. */
export async function loopbackMBps(seconds: number): Promise<number> {
  const child = spawn(process.execPath, [SINK_JS], { stdio: ['ignore', 'pipe', 'inherit'] })
  try {
    const port = await new Promise<number>((resolvePort, reject) => {
      let buf = ''
      child.stdout!.on('data', (d: Buffer) => {
        buf += d.toString()
        const m = /^port (\d+)$/m.exec(buf)
        if (m !== null) resolvePort(Number(m[1]))
      })
      child.once('exit', (code) => reject(new Error(`tcp sink exited (${code})`)))
    })
    const chunk = Buffer.alloc(1 << 20, 0x5a)
    const sock = connect({ host: '127.0.0.1', port })
    await new Promise<void>((res, rej) => {
      sock.once('connect', () => res())
      sock.once('error', rej)
    })
    let bytes = 0
    const t0 = performance.now()
    const end = t0 + seconds * 1000
    await new Promise<void>((res, rej) => {
      sock.once('error', rej)
      const pump = (): void => {
        while (performance.now() < end) {
          bytes += chunk.length
          if (!sock.write(chunk)) {
            sock.once('drain', pump)
            return
          }
        }
        sock.end(() => res())
      }
      pump()
    })
    const elapsed = (performance.now() - t0) / 1000
    sock.destroy()
    return bytes / 2 ** 20 / elapsed
  } finally {
    child.kill('SIGTERM')
  }
}
