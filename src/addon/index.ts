// Loads the native IO core (native/, built by node-gyp into build/) and exposes it as `native`.
// Search order: $SKEIN_NATIVE_PATH, <repo>/build/Release, <repo>/build/Debug. There is deliberately no
// pure-JS fallback: a broker without sendfile and mmap'd indexes should fail at startup, saying why.
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, parse } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Socket } from 'node:net'
import type { NativeBinding } from './types.js'

export type { NativeBinding, NativeIndexFile } from './types.js'

const ADDON_FILE = 'skein_native.node'
const REQUIRED_FUNCTIONS = ['crc32c', 'crc32cSoftware', 'crc32cHardware', 'openIndex', 'sendfile', 'trySendfile', 'fsync', 'mallocTune'] as const

// The repo root is the nearest directory holding binding.gyp: two levels above src/addon/index.ts under
// vitest, three above dist/src/addon/index.js once compiled.
function findRepoRoot(start: string): string {
  let dir = start
  const { root } = parse(dir)
  while (dir !== root) {
    if (existsSync(join(dir, 'binding.gyp'))) return dir
    dir = dirname(dir)
  }
  throw new Error(`skein: cannot locate the package root (no binding.gyp above ${start})`)
}

/** Where the loader looks for the addon, in order. */
export function nativeCandidates(): string[] {
  const candidates: string[] = []
  const explicit = process.env.SKEIN_NATIVE_PATH
  if (explicit !== undefined && explicit !== '') candidates.push(explicit)
  try {
    const root = findRepoRoot(dirname(fileURLToPath(import.meta.url)))
    candidates.push(join(root, 'build', 'Release', ADDON_FILE), join(root, 'build', 'Debug', ADDON_FILE))
  } catch {
    // Only the explicit path is left; the final error lists what was tried.
  }
  return candidates
}

/** Loads the first candidate that is a working skein addon; throws listing every failure otherwise. */
export function loadNativeBinding(candidates: readonly string[] = nativeCandidates()): NativeBinding {
  const require = createRequire(import.meta.url)
  const failures: string[] = []
  for (const path of candidates) {
    if (!existsSync(path)) {
      failures.push(`${path}: not found`)
      continue
    }
    try {
      const binding = require(path) as Record<string, unknown>
      const missing = REQUIRED_FUNCTIONS.filter((name) => typeof binding[name] !== 'function')
      if (missing.length > 0) {
        failures.push(`${path}: not a skein addon or out of date (missing ${missing.join(', ')})`)
        continue
      }
      return binding as unknown as NativeBinding
    } catch (err) {
      failures.push(`${path}: ${err instanceof Error ? err.message : String(err)}`)
    }
  }
  const tried = failures.length > 0 ? failures.map((f) => `  ${f}`).join('\n') : '  (no candidate paths)'
  throw new Error(
    'skein: the native addon (skein_native.node) is missing or failed to load. Run `npm install` ' +
      '(or `npm run build:native`) to build it; it needs a C++20 compiler, make and python3. Tried:\n' +
      tried,
  )
}

export const native: NativeBinding = loadNativeBinding()

/** The OS file descriptor of a connected net.Socket (Linux), for native.sendfile. */
export function socketFd(socket: Socket): number {
  const handle = (socket as unknown as { _handle?: { fd?: unknown } | null })._handle
  const fd = handle?.fd
  if (typeof fd !== 'number' || !Number.isInteger(fd) || fd < 0) {
    throw new Error('socketFd: the socket has no file descriptor (not connected yet, already destroyed, or not on Linux)')
  }
  return fd
}
