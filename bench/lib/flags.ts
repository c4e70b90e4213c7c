// Command-line flags of the benchmarks: `--name value` pairs and bare `--switch`es in process.argv.

/** The value after `--name`, or undefined when the flag is absent; a flag without a value is an error. */
export function flag(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`)
  if (i === -1) return undefined
  const v = process.argv[i + 1]
  if (v === undefined || v.startsWith('--')) throw new Error(`--${name} needs a value`)
  return v
}

/**
 * Node options given as one flag (`--broker-node-args "--cpu-prof --max-semi-space-size=64"`): their value
 * starts with `--`, which flag() would take for a missing value, so the next word is read as it is.
 */
export function nodeArgsFlag(name: string): string[] {
  const i = process.argv.indexOf(`--${name}`)
  return i === -1 ? [] : (process.argv[i + 1] ?? '').split(' ').filter((w) => w !== '')
}
