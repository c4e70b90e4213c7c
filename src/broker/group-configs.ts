// Group configs (KIP-848 / KIP-932: DescribeConfigs and IncrementalAlterConfigs on GROUP resources) in
// the cluster metadata, and the broker's copy of them: read from the store at startup, refreshed group by
// group when a config change notification names a groups/ entity, so a change made through any broker
// applies on every broker without a restart, and survives restarts.
//
// Layout: /config/groups/<group id, sanitized as Kafka's Sanitizer does user names> with Kafka's entity
// JSON {"version":1,"config":{...}} (ZooKeeper), or the embedded store's configs.groups of a single broker.
// Values are checked by config/group-configs.ts (Kafka's GroupConfig.validate) before anything is
// written. The coordinators read a group's effective value through `effective` (the group's override,
// else the broker default).
import { desanitizeEntityName, sanitizeEntityName } from '../auth/sanitize.js'
import type { ConfigChange, MetadataStore } from '../cluster/metadata-store.js'
import {
  effectiveGroupConfig, formatValue, groupConfigDef, parseGroupConfigs, resolveGroupConfigs, validateGroupConfigs,
  type ConfigValue, type GroupConfigBroker, type ResolvedConfig,
} from '../config/index.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import type { Logger } from '../observability/logger.js'
import type { GroupConfigAdmin } from '../server/handlers/common/ports.js'

export class GroupConfigService implements GroupConfigAdmin {
  /** Group id -> its overrides as stored (only groups that have some). */
  readonly #stored = new Map<string, Record<string, string>>()
  readonly #parsed = new Map<string, Map<string, ConfigValue>>()

  constructor(
    private readonly store: MetadataStore,
    private readonly broker: () => GroupConfigBroker,
    private readonly log: Logger,
  ) {}

  /** Loads every group's configs (broker startup). */
  async start(): Promise<void> {
    const names = await this.store.getEntityNames('groups')
    for (const name of names) this.#set(desanitizeEntityName(name), await this.store.getEntityConfig('groups', name))
    if (names.length > 0) this.log.info({ groups: names.length }, 'group configs loaded')
  }

  /** Change notifications: groups/ entities are read again. */
  async onConfigChanges(changes: readonly ConfigChange[]): Promise<void> {
    for (const c of changes) {
      if (c.entityType !== 'groups') continue
      const group = desanitizeEntityName(c.entityName)
      try {
        const stored = await this.store.getEntityConfig('groups', c.entityName)
        this.#set(group, stored)
        this.log.info({ group, configs: stored }, 'group configs changed')
      } catch (err) {
        this.log.error({ err: (err as Error).message, group }, 'cannot read changed group configs')
      }
    }
  }

  /** The group's overrides as stored (name -> string). */
  groupConfigs(group: string): Readonly<Record<string, string>> {
    checkGroupName(group)
    return this.#stored.get(group) ?? {}
  }

  /** DescribeConfigs: every group config with its effective value and source. */
  describe(group: string): ResolvedConfig[] {
    checkGroupName(group)
    return resolveGroupConfigs(this.broker(), this.#parsed.get(group))
  }

  /** The effective value of a group config for a group: its override, else the broker default. */
  effective(group: string, name: string): ConfigValue {
    return effectiveGroupConfig(name, this.#parsed.get(group) ?? new Map(), this.broker())
  }

  /**
   * Replaces a group's overrides (IncrementalAlterConfigs merges first): validated with Kafka's rules
   * (INVALID_CONFIG), then written to the store (with a change notification) and applied here.
   */
  async replaceGroupConfigs(group: string, values: ReadonlyMap<string, string>, validateOnly: boolean): Promise<void> {
    checkGroupName(group)
    const parsed = validateGroupConfigs(values, this.broker())
    const stored: Record<string, string> = {}
    for (const [name, value] of parsed) stored[name] = formatValue(groupConfigDef(name)!, value) ?? ''
    if (validateOnly) return
    await this.store.setEntityConfig('groups', sanitizeEntityName(group), stored)
    this.#set(group, stored)
    this.log.info({ group, configs: stored }, 'group configs changed')
  }

  #set(group: string, stored: Record<string, string>): void {
    if (Object.keys(stored).length === 0) {
      this.#stored.delete(group)
      this.#parsed.delete(group)
    } else {
      this.#stored.set(group, { ...stored })
      this.#parsed.set(group, parseGroupConfigs(stored))
    }
  }
}

/** Kafka's rule for GROUP config resources: the name must not be empty (INVALID_REQUEST). */
function checkGroupName(group: string): void {
  if (group === '') throw new KafkaError(ErrorCode.INVALID_REQUEST, 'Group name must not be empty')
}
