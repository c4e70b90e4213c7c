// Fault scenarios in the cluster's environment rather than its processes: the ZooKeeper leader killed in
// a 3-node ensemble, a full disk under one broker (a tmpfs mount), a slow link (DelayProxy), and network
// faults between brokers in namespaces (NetnsLab): the leader cut from its followers, the leader cut from
// ZooKeeper, a follower cut off, random packet loss, a bandwidth cap. Each cleans up what it created.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { batchOf, fillFilesystem, freeLoopbackPort, startZooKeeper, startZooKeeperEnsemble, type ZooKeeperEnsemble, type ZooKeeperTestServer } from '../harness/index.js'
import { DelayProxy, NetnsLab, netnsUnavailable } from './network.js'
import { produceToZombie } from './scenarios.js'
import { SESSION_TIMEOUT_MS, repetitions, sleep, until, type PartitionView, type RoundResult, type Scenario, type ScenarioContext } from './runner.js'

const HOLD_MS = 12_000

export function zookeeperLeaderKilled(): Scenario {
  let ensemble: ZooKeeperEnsemble | undefined
  return {
    name: 'zookeeper-leader-killed',
    description: 'The leader of a 3-node ZooKeeper ensemble SIGKILLed (the brokers\' sessions move to the other servers), then restarted; the brokers keep serving and nothing is lost.',
    rounds: Math.max(1, Math.ceil(repetitions() / 2)),
    cluster: {
      async setup() {
        ensemble = await startZooKeeperEnsemble(3)
        const e = ensemble
        const zookeeper: ZooKeeperTestServer = { server: e.servers[0]!, connectString: e.connectString, stop: () => e.stop() }
        return { options: { zookeeper }, cleanup: () => e.stop() }
      },
    },
    async round(ctx) {
      const e = ensemble!
      const modes = await Promise.all(e.servers.map((s) => s.mode()))
      const leader = e.servers[modes.indexOf('leader')]
      if (leader === undefined) throw new Error(`no ZooKeeper leader (modes ${modes.join(',')})`)
      const t0 = Date.now()
      leader.kill('SIGKILL')
      await leader.waitForExit()
      const next = await until('a new ZooKeeper leader', async () => {
        for (const s of e.servers) if (s !== leader && (await s.mode()) === 'leader') return s.id
        return undefined
      }, 30_000)
      ctx.note(`ZooKeeper leader ${leader.id} killed; server ${next} led after ${Date.now() - t0} ms`)
      await sleep(SESSION_TIMEOUT_MS)
      leader.launch()
      await leader.waitUntilServing()
      return { affected: (await ctx.view()).map((p) => p.partition) }
    },
  }
}

/**
 * Disk full: broker 3's log dir is a small tmpfs. A round fills it (a filler file up to ENOSPC) under the
 * workload. As in Kafka, the first write that fails takes the log dir offline: its replicas go offline and
 * the controller moves their leaderships to in-sync replicas elsewhere. Unlike Kafka, broker 3 stays up
 * (its only dir is full, not broken: log.dir.failure.retry.interval.ms). The round notes how long
 * leadership took to leave it, holds, frees the space and waits, without restarting anything, until the
 * dir is reopened and broker 3 is back in every ISR (the time from freeing the space is noted); a broker
 * that stopped or did not come back fails the round. Nothing acknowledged may be lost and the replicas must
 * be byte-identical up to the HW: a refused write leaves nothing behind, and the reopen's recovery cuts a
 * torn tail.
 */
export function diskFull(): Scenario {
  const victim = 3
  let mount: string | undefined
  return {
    name: 'disk-full',
    description: 'Broker 3\'s log dir (a 64 MiB tmpfs) filled up under the workload: the dir goes offline (Kafka\'s log dir failure), its leaderships move to other in-sync replicas within seconds and broker 3 stays up; once the space is freed the dir comes back by itself (log.dir.failure.retry.interval.ms, no restart) and broker 3 rejoins every ISR, no corruption, nothing acknowledged lost.',
    rounds: Math.max(1, Math.ceil(repetitions() / 5)),
    unavailable: () => (process.getuid?.() === 0 ? undefined : 'needs root (mount -t tmpfs)'),
    logDir: (b) => (b.id === victim ? mount : undefined),
    cluster: {
      async setup() {
        const dir = mkdtempSync(join(tmpdir(), 'skein-faults-disk-'))
        execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', dir])
        mount = dir
        return {
          options: { brokerOverrides: (id: number) => (id === victim ? [`log.dirs=${dir}`] : []) },
          async cleanup() {
            execFileSync('umount', [dir])
            rmdirSync(dir)
          },
        }
      },
    },
    async round(ctx, round) {
      const b = ctx.cluster.broker(victim)
      const view = await ctx.view()
      const affected = view.filter((p) => p.replicas.includes(victim)).map((p) => p.partition)
      // This round's lines of broker 3's log only.
      const logFrom = b.output().length
      const filler = join(mount!, `filler-${round}`)
      const filled = fillFilesystem(filler, 1 << 20)
      const failsBefore = ctx.workload.history.filter((o) => o.type === 'send' && o.outcome === 'fail').length
      const t0 = Date.now()
      // What a producer is told by the full broker, where it leads a partition.
      const led = view.find((p) => p.leader === victim)
      if (led !== undefined) {
        const raw = await b.client()
        const value = `disk-full-probe-${round}`
        try {
          const res = await raw.produce(ctx.topic, led.partition, batchOf([{ key: null, value: Buffer.from(value) }]), -1)
          ctx.record({ type: 'send', client: 'disk-probe', seq: round, value, acks: -1, time: Date.now(), ...(res.errorCode === 0 ? { outcome: 'ok', partition: led.partition, offset: Number(res.baseOffset) } : { outcome: 'fail', error: `error code ${res.errorCode}` }) })
          ctx.note(`round ${round}: an acks=all produce to partition ${led.partition} on the full broker got error code ${res.errorCode}${res.errorCode === 56 ? ' (KAFKA_STORAGE_ERROR)' : ''}`)
        } catch (err) {
          ctx.record({ type: 'send', client: 'disk-probe', seq: round, value, acks: -1, time: Date.now(), outcome: 'fail', error: (err as Error).message })
          ctx.note(`round ${round}: an acks=all produce to the full broker got no answer (${(err as Error).message})`)
        } finally {
          raw.close()
        }
      }
      // Leadership leaves broker 3 and it leaves every ISR (its replicas offline).
      const moved = await until('leadership and ISR membership off the full broker', async () => {
        try {
          const v = await ctx.view()
          return v.every((p) => p.leader !== victim && p.leader >= 0 && !p.isr.includes(victim)) ? v : undefined
        } catch {
          return undefined
        }
      }, HOLD_MS + 20_000).then((v) => ({ v, ms: Date.now() - t0 }), (err: Error) => ({ v: undefined, ms: -1, err }))
      ctx.note(moved.v === undefined ? `round ${round}: leadership did NOT leave broker ${victim} (${'err' in moved ? moved.err.message : ''})` : `round ${round}: leadership and ISRs off broker ${victim} ${moved.ms} ms after the disk filled: ${describe(moved.v)}`)
      await sleep(Math.max(0, HOLD_MS - (Date.now() - t0)))
      const out = b.output().slice(logFrom)
      const errorLines = out.split('\n').filter((l) => /ENOSPC|KAFKA_STORAGE_ERROR|no space left|log dir.*offline|is full/i.test(l))
      if (errorLines.length > 0) ctx.note(`round ${round}: broker ${victim}'s first storage error: ${errorLines[0]!.slice(0, 300)}`)
      ctx.note(
        `round ${round}: filled ${filled >> 20} MiB; after ${HOLD_MS} ms broker ${victim} ${b.alive() ? 'alive' : 'exited'}, ${errorLines.length} storage error lines in its log, ` +
          `${ctx.workload.history.filter((o) => o.type === 'send' && o.outcome === 'fail').length - failsBefore} failed sends`,
      )
      if (!b.alive()) throw new Error(`round ${round}: broker ${victim} stopped on a full disk (last log: ${out.trim().split('\n').slice(-2).join(' | ').slice(0, 400)})`)
      rmSync(filler)
      const t1 = Date.now()
      // Back by itself: the dir reopened (its retry interval), the replicas caught up and in every ISR again.
      const back = await until(`broker ${victim} back in every ISR without a restart`, async () => {
        const v = await ctx.view().catch(() => undefined)
        return v !== undefined && v.every((p) => p.leader >= 0 && p.isr.includes(victim) && p.offline.length === 0) ? v : undefined
      }, 60_000, 100).then((v) => ({ v, ms: Date.now() - t1 }), (err: Error) => ({ v: undefined, ms: -1, err }))
      const reopens = b.output().slice(logFrom).split('\n').filter((l) => /has room again/.test(l)).length
      if (back.v === undefined) {
        throw new Error(`round ${round}: broker ${victim} not back in every ISR 60 s after space was freed, without a restart (${'err' in back ? back.err.message : ''}); ${reopens} reopens of its dir logged`)
      }
      ctx.note(`round ${round}: space freed; broker ${victim} back in every ISR ${back.ms} ms later without a restart (the dir is retried every log.dir.failure.retry.interval.ms, default 5000): ${describe(back.v)}`)
      return { affected }
    },
  }
}

/** Broker 1 reached by everyone through a DelayProxy; a round adds 200 ms per direction for a while. */
export function slowLink(): Scenario {
  let proxy: DelayProxy | undefined
  return {
    name: 'slow-link',
    description: 'Every connection to broker 1 (clients, followers, controller) through a userspace TCP proxy that adds 200 ms each way for a while (netem is unavailable here).',
    rounds: Math.max(1, Math.ceil(repetitions() / 5)),
    cluster: {
      async setup() {
        const port = await freeLoopbackPort()
        proxy = await DelayProxy.start(() => port)
        const p = proxy
        return {
          options: { brokerPort: (id: number) => (id === 1 ? port : undefined), brokerOverrides: (id: number) => (id === 1 ? [`advertised.listeners=PLAINTEXT://127.0.0.1:${p.port}`] : []) },
          cleanup: () => p.close(),
        }
      },
    },
    async round(ctx) {
      const view = await ctx.view()
      proxy!.delayMs = 200
      await sleep(HOLD_MS)
      proxy!.delayMs = 0
      return { affected: view.filter((p) => p.leader === 1).map((p) => p.partition) }
    },
  }
}

function describe(view: PartitionView[]): string {
  return view.map((p) => `${p.partition}: leader ${p.leader} isr ${p.isr.join(',')}`).join('; ')
}

type NetRound = (ctx: ScenarioContext, lab: NetnsLab, zkPort: number, round: number) => Promise<RoundResult>

/** A scenario whose brokers each run in a network namespace, ZooKeeper on the bridge's host address. */
function netns(name: string, description: string, round: NetRound): Scenario {
  let lab: NetnsLab | undefined
  let zk: ZooKeeperTestServer | undefined
  return {
    name,
    description,
    rounds: Math.max(1, Math.ceil(repetitions() / 5)),
    unavailable: netnsUnavailable,
    cluster: {
      async setup() {
        const l = new NetnsLab([1, 2, 3])
        try {
          l.setup()
          zk = await startZooKeeper({ clientPortAddress: l.hostIp })
        } catch (err) {
          l.cleanup()
          throw err
        }
        lab = l
        const z = zk
        return {
          options: { zookeeper: z, brokerHost: (id: number) => l.ip(id), brokerCommandPrefix: (id: number) => l.prefix(id) },
          async cleanup() {
            await z.stop()
            l.cleanup()
            const left = l.leftovers()
            if (left.length > 0) throw new Error(`left behind: ${left.join(', ')}`)
          },
        }
      },
    },
    async round(ctx, r) {
      try {
        return await round(ctx, lab!, zk!.server.port, r)
      } finally {
        for (const id of lab!.ids) lab!.heal(id)
        ctx.unreachable.clear()
      }
    },
  }
}

export function networkScenarios(): Scenario[] {
  return [
    netns(
      'partition-leader-from-followers',
      'The partition-0 leader cut from both followers (iptables DROP in its namespace) but not from ZooKeeper or clients, for 12 s: followers fall out of its ISR, acks=all stops (min.insync.replicas=2), nothing acknowledged is lost; after healing the ISR re-expands.',
      async (ctx, lab, _zk, round) => {
        const [p0] = await ctx.view()
        const leader = p0!.leader
        const followers = p0!.replicas.filter((r) => r !== leader)
        lab.cut(leader, followers.map((f) => lab.ip(f)))
        await sleep(HOLD_MS)
        const [seen] = await ctx.view()
        ctx.note(`round ${round}: leader ${leader} cut from ${followers.join(',')}; after ${HOLD_MS} ms partition 0 led by ${seen!.leader}, ISR ${seen!.isr.join(',')}`)
        return { affected: [0] }
      },
    ),
    netns(
      'partition-leader-from-zookeeper',
      'The partition-0 leader cut from ZooKeeper only, past its session timeout: the controller elects another leader; the cut-off broker, still reachable by clients and followers, must not acknowledge anything that is then lost; after healing it rejoins as a follower.',
      async (ctx, lab, zkPort, round) => {
        const [p0] = await ctx.view()
        const leader = p0!.leader
        const t0 = Date.now()
        lab.cut(leader, [lab.hostIp], zkPort)
        // The cut-off broker still answers clients, from its own stale view: ask the others.
        ctx.unreachable.add(leader)
        const raw = await ctx.cluster.broker(leader).client()
        try {
          const [moved] = await ctx.agreed((ps) => ps[0]!.leader >= 0 && ps[0]!.leader !== leader, 'another leader of partition 0', SESSION_TIMEOUT_MS * 6)
          ctx.note(`round ${round}: leader ${leader} cut from ZooKeeper; partition 0 moved to ${moved!.leader} after ${Date.now() - t0} ms`)
          // It still serves: acks=all writes sent to it now must fail and never be seen.
          await produceToZombie(ctx, raw, round)
        } finally {
          raw.close()
          lab.heal(leader)
          ctx.unreachable.delete(leader)
        }
        return { affected: [0] }
      },
    ),
    ...(['leader', 'controller'] as const).map((role) =>
      netns(
        `partition-${role}-from-cluster`,
        `A partition leader${role === 'controller' ? ' that is also the controller' : ' (not the controller)'} cut from ZooKeeper and from both other brokers, but not from its clients, for 12 s: within broker.session.timeout.ms the others elect new leaders for its partitions (${role === 'controller' ? 'after deleting its /controller registration and electing a new controller' : 'the controller fences it'}) while its ZooKeeper session (6 s) is still alive; the cut-off broker's lease lapses first, so it answers acks=all writes NOT_LEADER_OR_FOLLOWER instead of holding them, and nothing acknowledged is lost; after healing it rejoins as a follower.`,
        async (ctx, lab, zkPort, round) => {
          const view = await ctx.view()
          const controller = await ctx.controller()
          const led = (id: number): number[] => view.filter((p) => p.leader === id).map((p) => p.partition)
          const victim = role === 'controller' ? controller : (view.find((p) => p.leader !== controller)?.leader ?? -1)
          if (victim < 0 || led(victim).length === 0) {
            ctx.note(`round ${round}: no partition led by ${role === 'controller' ? 'the controller' : 'a broker other than the controller'} (${describe(view)}); round skipped`)
            return { affected: [] }
          }
          const affected = led(victim)
          const partition = affected[0]!
          const raw = await ctx.cluster.broker(victim).client()
          const t0 = Date.now()
          lab.cut(victim, [lab.hostIp], zkPort)
          lab.cut(victim, lab.ids.filter((id) => id !== victim).map((id) => lab.ip(id)))
          ctx.unreachable.add(victim)
          try {
            await ctx.agreed((ps) => affected.every((p) => ps[p]!.leader >= 0 && ps[p]!.leader !== victim), `new leaders of ${affected.join(',')}`, HOLD_MS * 2)
            ctx.note(`round ${round}: ${role} ${victim} (leading ${affected.join(',')}) cut from ZooKeeper and brokers ${lab.ids.filter((id) => id !== victim).join(',')}; its partitions led by others after ${Date.now() - t0} ms`)
            // The cut-off broker still reaches its clients: an acks=all write to it is refused, not held.
            const t1 = Date.now()
            const res = await raw.produce(ctx.topic, partition, batchOf([{ key: null, value: Buffer.from(`cut-${round}`) }]), -1)
            const base = { type: 'send', client: `cut-${round}`, seq: 0, value: `cut-${round}`, acks: -1, time: Date.now() } as const
            ctx.record(res.errorCode === 0 ? { ...base, outcome: 'ok', partition, offset: Number(res.baseOffset) } : { ...base, outcome: 'fail', definite: true, error: `error code ${res.errorCode}` })
            ctx.note(`round ${round}: the cut-off broker answered an acks=all write to partition ${partition} with error code ${res.errorCode} after ${Date.now() - t1} ms`)
            if (res.errorCode !== 6) throw new Error(`the cut-off broker answered error code ${res.errorCode}, not NOT_LEADER_OR_FOLLOWER (6)`)
            await sleep(Math.max(0, HOLD_MS - (Date.now() - t0)))
          } finally {
            raw.close()
            lab.heal(victim)
            ctx.unreachable.delete(victim)
          }
          const t2 = Date.now()
          await ctx.healed()
          ctx.note(`round ${round}: healed; full ISRs again after ${Date.now() - t2} ms`)
          return { affected }
        },
      ),
    ),
    netns(
      'follower-cut-off',
      'A follower (not the controller) cut from the other brokers for 12 s: the leaders shrink their ISRs without it (replica.lag.time.max.ms=3000), and after healing it catches up and the ISRs re-expand.',
      async (ctx, lab, _zk, round) => {
        const view = await ctx.view()
        const controller = await ctx.controller()
        const victim = view[0]!.replicas.find((r) => r !== view[0]!.leader && r !== controller) ?? view[0]!.replicas.find((r) => r !== view[0]!.leader)!
        const others = lab.ids.filter((id) => id !== victim)
        const t0 = Date.now()
        lab.cut(victim, others.map((o) => lab.ip(o)))
        // Cut from the controller, it answers a stale view: ask the others.
        ctx.unreachable.add(victim)
        const shrunk = await until('an ISR without the cut-off follower', async () => {
          const ps = await ctx.view()
          return ps.some((p) => p.leader !== victim && !p.isr.includes(victim)) ? Date.now() - t0 : undefined
        }, HOLD_MS * 2).catch(() => undefined)
        if (shrunk === undefined) throw new Error(`no ISR shrank without the cut-off follower ${victim}`)
        ctx.note(`round ${round}: follower ${victim} cut off; an ISR shrank without it after ${shrunk} ms`)
        await sleep(Math.max(0, HOLD_MS - shrunk))
        ctx.note(`round ${round}: controller ${controller}; before the cut ${describe(view)}; at the end of the cut ${describe(await ctx.view())}`)
        lab.heal(victim)
        ctx.unreachable.delete(victim)
        const t1 = Date.now()
        await ctx.healed()
        ctx.note(`round ${round}: healed; full ISRs again after ${Date.now() - t1} ms`)
        // Partitions it follows (one it leads is cut from its followers: unavailable, as in partition-leader-from-followers).
        return { affected: view.filter((p) => p.replicas.includes(victim) && p.leader !== victim).map((p) => p.partition) }
      },
    ),
    netns(
      'packet-loss',
      'Random loss of 10% of the packets in and out of the partition-0 leader (iptables -m statistic --mode random) for 12 s.',
      async (ctx, lab, _zk, round) => {
        const [p0] = await ctx.view()
        lab.loss(p0!.leader, 0.1)
        await sleep(HOLD_MS)
        ctx.note(`round ${round}: 10% loss at broker ${p0!.leader}`)
        return { affected: [0] }
      },
    ),
    netns(
      'bandwidth-cap',
      'The partition-0 leader\'s link capped at 256 kbit/s both ways (tc qdisc tbf) for 12 s.',
      async (ctx, lab, _zk, round) => {
        const [p0] = await ctx.view()
        lab.cap(p0!.leader, '256kbit')
        await sleep(HOLD_MS)
        ctx.note(`round ${round}: tbf 256kbit at broker ${p0!.leader}`)
        return { affected: [0] }
      },
    ),
  ]
}
