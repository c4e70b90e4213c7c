// Typed ZooKeeper errors: every failed operation rejects with a ZooKeeperError whose `code` is one of
// KeeperException.Code (ZooKeeperErrorCode), so callers switch on numbers, not on messages.
import { ZooKeeperErrorCode, zooKeeperErrorName, type RawMultiResult } from './protocol.js'

export class ZooKeeperError extends Error {
  override readonly name = 'ZooKeeperError'
  /** KeeperException.Code, e.g. ZooKeeperErrorCode.NONODE (-101). */
  readonly code: number
  /** The client path the failed operation was about, when there is one. */
  readonly path: string | undefined

  constructor(code: number, path?: string, detail?: string) {
    super(`${zooKeeperErrorName(code)}${path !== undefined ? ` for ${path}` : ''}${detail !== undefined ? `: ${detail}` : ''}`)
    this.code = code
    this.path = path
  }

  /** Name of the code, e.g. 'BADVERSION'. */
  get codeName(): string {
    return zooKeeperErrorName(this.code)
  }
}

/** True when err is a ZooKeeperError with one of the given codes. */
export function isZooKeeperError(err: unknown, ...codes: number[]): err is ZooKeeperError {
  return err instanceof ZooKeeperError && (codes.length === 0 || codes.includes(err.code))
}

/**
 * A multi that the server rejected as a whole (nothing was applied). `code` is the error of the first
 * operation that failed, `opIndex` its position, `results` the server's per-op codes: 0 (OK, rolled
 * back) before it, its own code, RUNTIMEINCONSISTENCY after it.
 */
export class ZooKeeperMultiError extends ZooKeeperError {
  readonly opIndex: number
  readonly results: readonly number[]

  constructor(code: number, opIndex: number, path: string | undefined, results: readonly number[]) {
    super(code, path, `operation ${opIndex} of a multi failed; nothing was applied`)
    this.opIndex = opIndex
    this.results = results
  }
}

/** The ZooKeeperMultiError for a multi answer with failed ops, or undefined when every op succeeded. */
export function multiFailure(results: readonly RawMultiResult[], paths: readonly string[]): ZooKeeperMultiError | undefined {
  const codes = results.map((r) => (r.ok ? ZooKeeperErrorCode.OK : r.err))
  if (results.every((r) => r.ok)) return undefined
  let index = codes.findIndex((c) => c !== ZooKeeperErrorCode.OK && c !== ZooKeeperErrorCode.RUNTIMEINCONSISTENCY)
  if (index < 0) index = codes.findIndex((c) => c !== ZooKeeperErrorCode.OK)
  if (index < 0) index = 0
  const code = codes[index] !== ZooKeeperErrorCode.OK ? codes[index] : ZooKeeperErrorCode.SYSTEMERROR
  return new ZooKeeperMultiError(code, index, paths[index], codes)
}
