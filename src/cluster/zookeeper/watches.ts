// The client's side of ZooKeeper watches (ZKWatchManager): which callbacks wait on which path, by kind.
// A watch is one-shot on the server and here: an event removes the callbacks it fires. Keys are client
// paths (chroot stripped). The same callback registered twice on one path and kind is kept once, and
// fires once per event even when it sits in several of the kinds the event triggers.
import type { WatchEventType } from './protocol.js'

export type WatchKind = 'data' | 'exist' | 'child'

export interface WatchEvent {
  /** What happened to the node; 'None' when the watch ended with the session instead. */
  type: WatchEventType
  /** 'SyncConnected' for node events; for 'None', why the watch ended. */
  state: 'SyncConnected' | 'Expired' | 'Closed' | 'AuthFailed'
  /** Client path (relative to the chroot). */
  path: string
}

export type Watcher = (event: WatchEvent) => void

export class WatchRegistry {
  private readonly byKind: Record<WatchKind, Map<string, Set<Watcher>>> = {
    data: new Map(),
    exist: new Map(),
    child: new Map(),
  }

  add(kind: WatchKind, path: string, watcher: Watcher): void {
    const map = this.byKind[kind]
    let set = map.get(path)
    if (set === undefined) {
      set = new Set()
      map.set(path, set)
    }
    set.add(watcher)
  }

  /** Removes and returns the callbacks an event of this type on path triggers (ZKWatchManager.materialize). */
  take(type: WatchEventType, path: string): Set<Watcher> {
    const out = new Set<Watcher>()
    const drain = (kind: WatchKind): void => {
      const set = this.byKind[kind].get(path)
      if (set === undefined) return
      this.byKind[kind].delete(path)
      for (const w of set) out.add(w)
    }
    switch (type) {
      case 'NodeCreated':
      case 'NodeDataChanged':
        drain('data')
        drain('exist')
        break
      case 'NodeChildrenChanged':
        drain('child')
        break
      case 'NodeDeleted':
        drain('data')
        drain('exist')
        drain('child')
        break
      case 'None':
        break
    }
    return out
  }

  /** Removes every watch: the session is over. Returns each (callback, path) pair once. */
  takeAll(): Array<[Watcher, string]> {
    const seen = new Map<string, Set<Watcher>>()
    const out: Array<[Watcher, string]> = []
    for (const kind of ['data', 'exist', 'child'] as const) {
      for (const [path, set] of this.byKind[kind]) {
        let done = seen.get(path)
        if (done === undefined) seen.set(path, (done = new Set()))
        for (const w of set) {
          if (done.has(w)) continue
          done.add(w)
          out.push([w, path])
        }
      }
      this.byKind[kind].clear()
    }
    return out
  }

  paths(kind: WatchKind): string[] {
    return [...this.byKind[kind].keys()]
  }

  get size(): number {
    return this.byKind.data.size + this.byKind.exist.size + this.byKind.child.size
  }
}
