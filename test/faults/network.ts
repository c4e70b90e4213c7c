// Network faults for the fault suite, on this machine's kernel (no netem: see
// shared/reference/cluster-design.md, "Environment checks"):
// - NetnsLab: one network namespace per broker, each with a veth pair whose host end joins a bridge that
//   also carries the host's address (where ZooKeeper and the test's clients are). Partitions are iptables
//   DROP rules inside a broker's namespace (they vanish with it), random loss is `-m statistic --mode
//   random`, and a bandwidth cap is a `tbf` qdisc on both ends of its veth. Needs root, ip (iproute2),
//   iptables and tc; cleanup() deletes the namespaces, the veths and the bridge.
// - DelayProxy: a TCP proxy on loopback that holds every chunk for a delay in each direction (a slow link;
//   netem's delay is unavailable here). A broker advertises the proxy's port, so clients, followers and
//   the controller all reach it through the proxy.
import { execFileSync, spawnSync } from 'node:child_process'
import { connect, createServer, type Server, type Socket } from 'node:net'

function sh(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
}

function tryRun(cmd: string, args: string[]): boolean {
  return spawnSync(cmd, args, { stdio: 'ignore' }).status === 0
}

/** Why namespace faults cannot run here, or undefined. */
export function netnsUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (network namespaces, iptables)'
  for (const [cmd, pkg] of [['ip', 'iproute2'], ['iptables', 'iptables'], ['tc', 'iproute2']] as const) {
    if (!tryRun('sh', ['-c', `command -v ${cmd}`])) return `${cmd} is missing (apt-get install -y ${pkg})`
  }
  return undefined
}

export class NetnsLab {
  readonly tag: string
  readonly subnet: string
  readonly hostIp: string
  readonly bridge: string
  private readonly created: number[] = []

  constructor(readonly ids: number[]) {
    const n = process.pid % 10000
    this.tag = String(n)
    // 10.214.<x>.0/24, x from the PID: parallel runs on one machine do not collide.
    this.subnet = `10.214.${n % 250}`
    this.hostIp = `${this.subnet}.1`
    this.bridge = `skfb${this.tag}`
  }

  ns(id: number): string {
    return `skf-${this.tag}-${id}`
  }

  ip(id: number): string {
    return `${this.subnet}.${10 + id}`
  }

  private hostVeth(id: number): string {
    return `skfv${this.tag}-${id}`.slice(0, 15)
  }

  /** The prefix that runs a broker inside its namespace (ip netns exec execs, keeping the PID). */
  prefix(id: number): string[] {
    return ['ip', 'netns', 'exec', this.ns(id)]
  }

  setup(): void {
    this.cleanup()
    sh('ip', ['link', 'add', this.bridge, 'type', 'bridge'])
    sh('ip', ['addr', 'add', `${this.hostIp}/24`, 'dev', this.bridge])
    sh('ip', ['link', 'set', this.bridge, 'up'])
    for (const id of this.ids) {
      const ns = this.ns(id)
      sh('ip', ['netns', 'add', ns])
      this.created.push(id)
      sh('ip', ['link', 'add', this.hostVeth(id), 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns])
      sh('ip', ['link', 'set', this.hostVeth(id), 'master', this.bridge])
      sh('ip', ['link', 'set', this.hostVeth(id), 'up'])
      sh('ip', ['netns', 'exec', ns, 'ip', 'addr', 'add', `${this.ip(id)}/24`, 'dev', 'eth0'])
      sh('ip', ['netns', 'exec', ns, 'ip', 'link', 'set', 'eth0', 'up'])
      sh('ip', ['netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up'])
    }
  }

  /** iptables inside a broker's namespace. */
  iptables(id: number, args: string[]): void {
    sh('ip', ['netns', 'exec', this.ns(id), 'iptables', ...args])
  }

  /** Drops every packet between broker `id` and the given addresses (both directions, at its end). */
  cut(id: number, addresses: string[], port?: number): void {
    for (const a of addresses) {
      const p = port === undefined ? [] : ['-p', 'tcp']
      this.iptables(id, ['-A', 'INPUT', '-s', a, ...p, ...(port === undefined ? [] : ['--sport', String(port)]), '-j', 'DROP'])
      this.iptables(id, ['-A', 'OUTPUT', '-d', a, ...p, ...(port === undefined ? [] : ['--dport', String(port)]), '-j', 'DROP'])
    }
  }

  /** Drops a random share of the packets broker `id` receives and sends. */
  loss(id: number, probability: number): void {
    for (const chain of ['INPUT', 'OUTPUT']) this.iptables(id, ['-A', chain, '-m', 'statistic', '--mode', 'random', '--probability', String(probability), '-j', 'DROP'])
  }

  /** A tbf bandwidth cap on both ends of broker `id`'s link. */
  cap(id: number, rate: string): void {
    const args = ['root', 'tbf', 'rate', rate, 'burst', '16kbit', 'latency', '500ms']
    sh('tc', ['qdisc', 'add', 'dev', this.hostVeth(id), ...args])
    sh('ip', ['netns', 'exec', this.ns(id), 'tc', 'qdisc', 'add', 'dev', 'eth0', ...args])
  }

  /** Removes every rule and qdisc from broker `id`'s namespace and link. */
  heal(id: number): void {
    this.iptables(id, ['-F'])
    tryRun('tc', ['qdisc', 'del', 'dev', this.hostVeth(id), 'root'])
    tryRun('ip', ['netns', 'exec', this.ns(id), 'tc', 'qdisc', 'del', 'dev', 'eth0', 'root'])
  }

  /** Deletes the namespaces (their veths and rules go with them) and the bridge; safe to call twice. */
  cleanup(): void {
    for (const id of this.ids) {
      tryRun('ip', ['netns', 'del', this.ns(id)])
      tryRun('ip', ['link', 'del', this.hostVeth(id)])
    }
    tryRun('ip', ['link', 'del', this.bridge])
    this.created.length = 0
  }

  /** What is left of this lab (for the scenario's check that cleanup worked). */
  leftovers(): string[] {
    const out: string[] = []
    const ns = sh('ip', ['netns', 'list'])
    for (const id of this.ids) if (ns.includes(this.ns(id))) out.push(this.ns(id))
    if (tryRun('ip', ['link', 'show', this.bridge])) out.push(this.bridge)
    return out
  }
}

/** A TCP proxy on 127.0.0.1 that delays every chunk by `delayMs` in each direction, keeping order. */
export class DelayProxy {
  delayMs = 0
  private readonly sockets = new Set<Socket>()

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(target: () => number): Promise<DelayProxy> {
    const server = createServer()
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen({ host: '127.0.0.1', port: 0 }, () => resolve())
    })
    const addr = server.address()
    const proxy = new DelayProxy(server, typeof addr === 'object' && addr !== null ? addr.port : 0)
    server.on('connection', (client) => proxy.pipe(client, target()))
    return proxy
  }

  private pipe(client: Socket, targetPort: number): void {
    const upstream = connect({ host: '127.0.0.1', port: targetPort })
    for (const s of [client, upstream]) {
      this.sockets.add(s)
      s.setNoDelay(true)
      s.on('error', () => {})
      s.on('close', () => {
        this.sockets.delete(s)
        client.destroy()
        upstream.destroy()
      })
    }
    const relay = (from: Socket, to: Socket): void => {
      // Chunks leave in arrival order, each no earlier than delayMs after it arrived.
      let tail = Promise.resolve()
      from.on('data', (d: Buffer) => {
        const due = Date.now() + this.delayMs
        tail = tail.then(async () => {
          const wait = due - Date.now()
          if (wait > 0) await new Promise((r) => setTimeout(r, wait))
          if (!to.destroyed) to.write(d)
        })
      })
    }
    relay(client, upstream)
    relay(upstream, client)
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}
