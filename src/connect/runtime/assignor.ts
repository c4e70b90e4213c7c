// The group leader's assignment of connectors and tasks to workers.
//
// Eager (protocol "default", Kafka's EagerAssignor): every rebalance hands out everything afresh,
// round-robin over the members sorted by id; members stopped all their work before rejoining.
//
// Incremental cooperative (KIP-415, Kafka's IncrementalCooperativeAssignor): members keep running what
// they have while they rejoin, and report it in their metadata. The leader
//   - revokes what is no longer configured (deleted connectors, tasks beyond a reduced count) and what
//     two members both claim;
//   - finds what is lost: in the leader's previous assignment of a member that is no longer in the group
//     (its worker left or died) and run by nobody now. Lost work waits up to scheduled.rebalance.max.delay.ms for its worker to come back (a
//     rolling restart should not move everything twice); members are told the remaining delay, rejoin
//     when it ends, and the leader then hands the lost work out;
//   - hands out new work to the least loaded members, connectors and tasks balanced separately;
//   - when members joined and the load is uneven, revokes the excess from the busiest members; they
//     rejoin at once and the freed work goes to the others in that next round.
// The leader keeps its previous assignment between rounds; a new leader starts without one, so work of a
// dead leader is handed out at once (as in Kafka).
import { type ConnectAssignment, type ConnectorsAndTasks, protocolVersion, taskIdString, type WorkerState } from './protocol.js'

export interface ConfiguredWork {
  connectors: string[]
  tasks: { connector: string; task: number }[]
}

export interface MemberInput {
  memberId: string
  state: WorkerState
}

export interface AssignorResult {
  assignments: Map<string, ConnectAssignment>
}

interface Item {
  kind: 'connector' | 'task'
  id: string
  connector: string
  task: number
}

function items(ct: ConnectorsAndTasks): Item[] {
  return [
    ...ct.connectors.map((c): Item => ({ kind: 'connector', id: `c:${c}`, connector: c, task: -1 })),
    ...ct.tasks.map((t): Item => ({ kind: 'task', id: `t:${taskIdString(t)}`, connector: t.connector, task: t.task })),
  ]
}

function toConnectorsAndTasks(list: Iterable<Item>): ConnectorsAndTasks {
  const out: ConnectorsAndTasks = { connectors: [], tasks: [] }
  for (const i of list) {
    if (i.kind === 'connector') out.connectors.push(i.connector)
    else out.tasks.push({ connector: i.connector, task: i.task })
  }
  return out
}

export class ConnectAssignor {
  /** Member id -> item ids of the last full assignment; lost items withheld are kept under ''. */
  private previous = new Map<string, Map<string, Item>>()
  private scheduledRebalance = 0
  private previousGenerationMembers = new Set<string>()

  constructor(private readonly maxDelayMs: number, private readonly now: () => number = Date.now) {}

  /** Forgets the previous round (this worker is no longer the leader). */
  reset(): void {
    this.previous.clear()
    this.scheduledRebalance = 0
    this.previousGenerationMembers.clear()
  }

  assign(protocol: string, leaderId: string, leaderUrl: string, configOffset: number, members: readonly MemberInput[], work: ConfiguredWork): Map<string, ConnectAssignment> {
    const version = protocolVersion(protocol)
    const base = (assigned: ConnectorsAndTasks, revoked: ConnectorsAndTasks, delayMs: number, error = 0): ConnectAssignment => ({
      version, error, leader: leaderId, leaderUrl, configOffset, assigned, revoked, delayMs,
    })
    const out = new Map<string, ConnectAssignment>()
    const ids = members.map((m) => m.memberId).sort()
    const configured = new Map(items(work).map((i) => [i.id, i]))
    if (version === 0) {
      // Eager: everything, round-robin; connectors first, then tasks.
      const per = new Map<string, Item[]>(ids.map((id) => [id, []]))
      let k = 0
      for (const i of configured.values()) per.get(ids[k++ % ids.length]!)!.push(i)
      for (const [id, list] of per) out.set(id, base(toConnectorsAndTasks(list), { connectors: [], tasks: [] }, 0))
      this.previous = new Map([...per].map(([id, list]) => [id, new Map(list.map((i) => [i.id, i]))]))
      return out
    }

    // What each member runs now, from its metadata; an item claimed twice is revoked from the later claimers.
    const current = new Map<string, Map<string, Item>>()
    const owner = new Map<string, string>()
    const revoked = new Map<string, Item[]>(ids.map((id) => [id, []]))
    for (const id of ids) {
      const m = members.find((x) => x.memberId === id)!
      const mine = new Map<string, Item>()
      for (const i of items(m.state.allocation?.assigned ?? { connectors: [], tasks: [] })) {
        if (!configured.has(i.id)) revoked.get(id)!.push(i)
        else if (owner.has(i.id)) revoked.get(id)!.push(i)
        else {
          owner.set(i.id, id)
          mine.set(i.id, i)
        }
      }
      current.set(id, mine)
    }

    // Lost: work of members that left the group since the last round (or withheld then), run by nobody
    // now. Work a member still in the group stopped by itself (new task configs) is simply unassigned.
    const now = this.now()
    const lost: Item[] = []
    const present = new Set(ids)
    for (const [member, prev] of this.previous) {
      if (present.has(member)) continue
      for (const [iid, i] of prev) if (!owner.has(iid) && configured.has(iid)) lost.push(i)
    }
    let delayMs = 0
    const withheld = new Map<string, Item>()
    const newMembers = ids.filter((id) => !this.previousGenerationMembers.has(id) && this.previousGenerationMembers.size > 0)
    if (lost.length > 0 && this.maxDelayMs > 0) {
      if (this.scheduledRebalance === 0) this.scheduledRebalance = now + this.maxDelayMs
      if (now < this.scheduledRebalance && newMembers.length === 0) {
        delayMs = this.scheduledRebalance - now
        for (const i of lost) withheld.set(i.id, i)
      } else {
        // The delay is over, or a worker (re)joined and can take the lost work: hand it out now.
        this.scheduledRebalance = 0
      }
    } else if (lost.length === 0) {
      this.scheduledRebalance = 0
    }

    // Unassigned work (new, or lost and no longer withheld) goes to the least loaded members.
    const assigned = new Map<string, Item[]>(ids.map((id) => [id, []]))
    const load = (id: string, kind: Item['kind']): number => [...current.get(id)!.values()].filter((i) => i.kind === kind).length + assigned.get(id)!.filter((i) => i.kind === kind).length
    const unassigned = [...configured.values()].filter((i) => !owner.has(i.id) && !withheld.has(i.id))
    for (const i of unassigned) {
      const target = [...ids].sort((a, b) => load(a, i.kind) - load(b, i.kind) || a.localeCompare(b))[0]
      if (target === undefined) continue
      assigned.get(target)!.push(i)
    }

    // Rebalance an uneven load (new members) when nothing else is moving this round.
    const nothingMoving = [...revoked.values()].every((r) => r.length === 0) && withheld.size === 0
    if (nothingMoving && ids.length > 1) {
      for (const kind of ['connector', 'task'] as const) {
        const total = ids.reduce((s, id) => s + load(id, kind), 0)
        const ceil = Math.ceil(total / ids.length)
        const floor = Math.floor(total / ids.length)
        const under = ids.filter((id) => load(id, kind) < floor)
        if (under.length === 0) continue
        let deficit = under.reduce((s, id) => s + (floor - load(id, kind)), 0)
        for (const id of [...ids].sort((a, b) => load(b, kind) - load(a, kind))) {
          const excess = load(id, kind) - (deficit > 0 ? floor : ceil)
          if (excess <= 0 || deficit <= 0) continue
          const take = [...current.get(id)!.values()].filter((i) => i.kind === kind).slice(-Math.min(excess, deficit))
          for (const i of take) {
            revoked.get(id)!.push(i)
            current.get(id)!.delete(i.id)
            deficit--
          }
        }
      }
    }

    // Remember the full result (withheld lost work under '' so it stays lost until handed out).
    const next = new Map<string, Map<string, Item>>()
    for (const id of ids) {
      const m = new Map(current.get(id)!)
      for (const i of revoked.get(id)!) m.delete(i.id)
      for (const i of assigned.get(id)!) m.set(i.id, i)
      next.set(id, m)
    }
    if (withheld.size > 0) next.set('', withheld)
    this.previous = next
    this.previousGenerationMembers = new Set(ids)
    for (const id of ids) out.set(id, base(toConnectorsAndTasks(assigned.get(id)!), toConnectorsAndTasks(revoked.get(id)!), delayMs))
    return out
  }
}
