// A connector's settings as the runtime reads them (Kafka's ConnectorConfig, SinkConnectorConfig,
// SourceConnectorConfig), the transformation chain they describe (transforms=a,b with
// transforms.a.type, transforms.a.predicate, transforms.a.negate, predicates.p.type), and validation
// into Kafka's ConfigInfos body (PUT /connector-plugins/{p}/config/validate, and every create / update).
import { ConfigDef, configKeyInfo, type ConfigKey, type ConfigValueResult, configValueInfo, NO_DEFAULT, Validators } from '../api/config-def.js'
import type { ConnectRecord, Predicate, Transformation } from '../api/plugin.js'
import type { Plugins } from './plugins.js'
import { withPrefix } from './worker-config.js'

const COMMON = 'Common'
const TRANSFORMS = 'Transforms'
const PREDICATES = 'Predicates'
const ERRORS = 'Error Handling'
const EOS = 'Exactly Once Support'
const OFFSETS = 'Offsets Topic'

function commonDef(): ConfigDef {
  return new ConfigDef()
    .define('name', 'STRING', NO_DEFAULT, 'HIGH', 'Globally unique name to use for this connector.', { group: COMMON, orderInGroup: 1, width: 'MEDIUM', displayName: 'Connector name', validator: Validators.nonEmptyString() })
    .define('connector.class', 'STRING', NO_DEFAULT, 'HIGH', 'Name or alias of the class for this connector. Must be a subclass of Connector.', { group: COMMON, orderInGroup: 2, width: 'LONG', displayName: 'Connector class' })
    .define('tasks.max', 'INT', 1, 'HIGH', 'Maximum number of tasks to use for this connector.', { group: COMMON, orderInGroup: 3, width: 'SHORT', displayName: 'Tasks max', validator: Validators.atLeast(1) })
    .define('tasks.max.enforce', 'BOOLEAN', true, 'LOW', '(Deprecated) Whether to enforce that the tasks.max property is respected by the connector.', { group: COMMON, orderInGroup: 4 })
    .define('key.converter', 'CLASS', null, 'LOW', 'Converter class used to convert between Kafka Connect format and the serialized form that is written to Kafka. This controls the format of the keys in messages written to or read from Kafka.', { group: COMMON, orderInGroup: 5, width: 'SHORT', displayName: 'Key converter class' })
    .define('value.converter', 'CLASS', null, 'LOW', 'Converter class used to convert between Kafka Connect format and the serialized form that is written to Kafka. This controls the format of the values in messages written to or read from Kafka.', { group: COMMON, orderInGroup: 6, width: 'SHORT', displayName: 'Value converter class' })
    .define('header.converter', 'CLASS', null, 'LOW', 'HeaderConverter class used to convert between Kafka Connect format and the serialized form that is written to Kafka.', { group: COMMON, orderInGroup: 7, width: 'SHORT', displayName: 'Header converter class' })
    .define('config.action.reload', 'STRING', 'restart', 'LOW', 'The action that Connect should take on the connector when changes in external configuration providers result in a change in the connector\'s configuration properties.', { group: COMMON, orderInGroup: 8, validator: Validators.inIgnoreCase('none', 'restart') })
    .define('transforms', 'LIST', [], 'LOW', 'Aliases for the transformations to be applied to records.', { group: TRANSFORMS, orderInGroup: 1, width: 'LONG', displayName: 'Transforms', validator: uniqueAliases })
    .define('predicates', 'LIST', [], 'LOW', 'Aliases for the predicates used by transformations.', { group: PREDICATES, orderInGroup: 1, width: 'LONG', displayName: 'Predicates', validator: uniqueAliases })
    .define('errors.retry.timeout', 'LONG', 0, 'MEDIUM', 'The maximum duration in milliseconds that a failed operation will be reattempted. The default is 0, which means no retries will be attempted. Use -1 for infinite retries.', { group: ERRORS, orderInGroup: 1, width: 'MEDIUM', displayName: 'Retry Timeout for Errors' })
    .define('errors.retry.delay.max.ms', 'LONG', 60000, 'MEDIUM', 'The maximum duration in milliseconds between consecutive retry attempts. Jitter will be added to the delay once this limit is reached to prevent thundering herd issues.', { group: ERRORS, orderInGroup: 2, width: 'MEDIUM', displayName: 'Maximum Delay Between Retries for Errors' })
    .define('errors.tolerance', 'STRING', 'none', 'MEDIUM', 'Behavior for tolerating errors during connector operation. \'none\' is the default value and signals that any error will result in an immediate connector task failure; \'all\' changes the behavior to skip over problematic records.', { group: ERRORS, orderInGroup: 3, width: 'SHORT', displayName: 'Error Tolerance', validator: Validators.inIgnoreCase('none', 'all') })
    .define('errors.log.enable', 'BOOLEAN', false, 'MEDIUM', 'If true, write each error and the details of the failed operation and problematic record to the Connect application log.', { group: ERRORS, orderInGroup: 4, width: 'SHORT', displayName: 'Log Errors' })
    .define('errors.log.include.messages', 'BOOLEAN', false, 'MEDIUM', 'Whether to include in the log the Connect record that resulted in a failure.', { group: ERRORS, orderInGroup: 5, width: 'SHORT', displayName: 'Log Error Details' })
}

function uniqueAliases(_name: string, v: unknown): string | undefined {
  if (!Array.isArray(v)) return undefined
  const dup = v.find((x, i) => v.indexOf(x) !== i)
  return dup === undefined ? undefined : `Duplicate alias provided: ${String(dup)}`
}

export function sinkConnectorDef(): ConfigDef {
  return commonDef()
    .define('topics', 'LIST', [], 'HIGH', 'List of topics to consume, separated by commas', { group: COMMON, orderInGroup: 4, width: 'LONG', displayName: 'Topics' })
    .define('topics.regex', 'STRING', '', 'HIGH', 'Regular expression giving topics to consume. Under the hood, the regex is compiled to a java.util.regex.Pattern. Only one of topics or topics.regex should be specified.', { group: COMMON, orderInGroup: 4, width: 'LONG', displayName: 'Topics regex', validator: Validators.regex() })
    .define('errors.deadletterqueue.topic.name', 'STRING', '', 'MEDIUM', 'The name of the topic to be used as the dead letter queue (DLQ) for messages that result in an error when processed by this sink connector, or its transformations or converters. The topic name is blank by default, which means that no messages are to be recorded in the DLQ.', { group: ERRORS, orderInGroup: 6, width: 'MEDIUM', displayName: 'Dead Letter Queue Topic Name' })
    .define('errors.deadletterqueue.topic.replication.factor', 'SHORT', 3, 'MEDIUM', 'Replication factor used to create the dead letter queue topic when it doesn\'t already exist.', { group: ERRORS, orderInGroup: 7, width: 'MEDIUM', displayName: 'Dead Letter Queue Topic Replication Factor' })
    .define('errors.deadletterqueue.context.headers.enable', 'BOOLEAN', false, 'MEDIUM', 'If true, add headers containing error context to the messages written to the dead letter queue. To avoid clashing with headers from the original record, all error context header keys, all error context header keys will start with __connect.errors.', { group: ERRORS, orderInGroup: 8, width: 'MEDIUM', displayName: 'Enable Error Context Headers' })
}

export function sourceConnectorDef(): ConfigDef {
  return commonDef()
    .define('exactly.once.support', 'STRING', 'requested', 'MEDIUM', 'Permitted values are requested, required. If set to "required", forces a preflight check for the connector to ensure that it can provide exactly-once semantics with the given configuration.', { group: EOS, orderInGroup: 1, validator: Validators.inIgnoreCase('requested', 'required') })
    .define('transaction.boundary', 'STRING', 'poll', 'MEDIUM', 'Permitted values are: poll, interval, connector. If set to \'poll\', a new producer transaction will be started and committed for every batch of records that each task from this connector provides to Connect.', { group: EOS, orderInGroup: 2, validator: Validators.inIgnoreCase('poll', 'interval', 'connector') })
    .define('transaction.boundary.interval.ms', 'LONG', null, 'LOW', 'If \'transaction.boundary\' is set to \'interval\', determines the interval for producer transaction commits by connector tasks. If unset, defaults to the value of the worker-level \'offset.flush.interval.ms\' property.', { group: EOS, orderInGroup: 3, validator: (_n, v) => (typeof v === 'number' && v < 0 ? 'Value must be at least 0' : undefined) })
    .define('offsets.storage.topic', 'STRING', null, 'LOW', 'The name of a separate offsets topic to use for this connector. If empty or not specified, the worker\'s global offsets topic name will be used.', { group: OFFSETS, orderInGroup: 1 })
    .define('topic.creation.groups', 'LIST', [], 'LOW', 'Groups of configurations for topics created by source connectors', { group: 'Topic Creation', orderInGroup: 1 })
}

/** The runtime's own definition of a connector's config, with each transform's and predicate's keys embedded. */
export function enrichedDef(kind: 'source' | 'sink', props: Record<string, string>, plugins: Plugins): { def: ConfigDef; problems: Map<string, string[]> } {
  const def = kind === 'sink' ? sinkConnectorDef() : sourceConnectorDef()
  const problems = new Map<string, string[]>()
  const add = (k: string, m: string): void => {
    problems.set(k, [...(problems.get(k) ?? []), m])
  }
  for (const [listKey, prefix, group, kindName] of [['transforms', 'transforms.', TRANSFORMS, 'transformation'], ['predicates', 'predicates.', PREDICATES, 'predicate']] as const) {
    const aliases = (props[listKey] ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '')
    let order = 1
    for (const alias of aliases) {
      const p = `${prefix}${alias}.`
      const typeKey = `${p}type`
      def.define(typeKey, 'CLASS', NO_DEFAULT, 'HIGH', `Class for the '${alias}' ${kindName}.`, { group: `${group}: ${alias}`, orderInGroup: order++, width: 'LONG', displayName: `${kindName} type for ${alias}` })
      if (listKey === 'transforms') {
        def.define(`${p}predicate`, 'STRING', null, 'MEDIUM', 'The alias of a predicate used to determine whether to apply this transformation.', { group: `${group}: ${alias}`, orderInGroup: order++ })
        def.define(`${p}negate`, 'BOOLEAN', false, 'MEDIUM', 'Whether the configured predicate should be negated.', { group: `${group}: ${alias}`, orderInGroup: order++ })
        const pred = props[`${p}predicate`]
        const predicates = (props['predicates'] ?? '').split(',').map((s) => s.trim())
        if (pred !== undefined && pred !== '' && !predicates.includes(pred)) add(`${p}predicate`, `Invalid value ${pred} for configuration ${p}predicate: The predicate ${pred} is not listed in predicates`)
      }
      const type = props[typeKey]
      if (type === undefined || type === '') continue
      try {
        const plugin = listKey === 'transforms' ? plugins.newTransformation(type) : plugins.newPredicate(type)
        const inner = plugin.config()
        def.embed(p, `${group}: ${alias}`, order, inner)
        order += inner.configKeys().length
      } catch (err) {
        add(typeKey, `Invalid value ${type} for configuration ${typeKey}: ${(err as Error).message}`)
      }
    }
  }
  return { def, problems }
}

export interface ConfigInfos {
  name: string
  error_count: number
  groups: string[]
  configs: { definition: Record<string, unknown>; value: Record<string, unknown> }[]
}

/**
 * Kafka's AbstractHerder.validateConnectorConfig: the runtime's keys (with transforms and predicates),
 * then the connector's own ConfigDef and its validate(), as one ConfigInfos body.
 */
export async function validateConnectorConfig(props: Record<string, string>, plugins: Plugins): Promise<ConfigInfos> {
  const className = props['connector.class'] ?? ''
  const kind = plugins.connectorKind(className)
  const connector = plugins.newConnector(className)
  const { def, problems } = enrichedDef(kind, props, plugins)
  const results: ConfigValueResult[] = def.validate(props)
  for (const r of results) for (const m of problems.get(r.name) ?? []) r.errorMessages.push(m)
  if (kind === 'sink') sinkChecks(props, results)
  if (kind === 'source') {
    const eos = results.find((r) => r.name === 'exactly.once.support')
    if (eos !== undefined && String(props['exactly.once.support'] ?? '').toLowerCase() === 'required' && eos.errorMessages.length === 0) {
      const support = (connector as { exactlyOnceSupport?: (p: Record<string, string>) => string | null }).exactlyOnceSupport?.(props) ?? null
      if (support !== 'SUPPORTED') eos.errorMessages.push('The connector does not support exactly-once semantics with the provided configuration.')
    }
    const tb = results.find((r) => r.name === 'transaction.boundary')
    if (tb !== undefined && String(props['transaction.boundary'] ?? '').toLowerCase() === 'connector') {
      const can = (connector as { canDefineTransactionBoundaries?: (p: Record<string, string>) => string }).canDefineTransactionBoundaries?.(props) ?? 'UNSUPPORTED'
      if (can !== 'SUPPORTED') tb.errorMessages.push('The connector does not support connector-defined transaction boundaries with the given configuration. Please reconfigure it to use a different transaction boundary definition.')
    }
  }
  const keys = new Map<string, ConfigKey>(def.configKeys().map((k) => [k.name, k]))
  const groups = def.groups()
  // The connector's own keys (those the runtime also defines are the runtime's).
  const own = connector.config()
  const ownResults = own.validate(props).filter((r) => !keys.has(r.name))
  if (connector.validate !== undefined) {
    let extra: { errors: Record<string, string[]> } = { errors: {} }
    try {
      extra = await connector.validate(props)
    } catch (err) {
      extra = { errors: { 'connector.class': [(err as Error).message] } }
    }
    for (const [k, msgs] of Object.entries(extra.errors)) {
      const r = ownResults.find((x) => x.name === k) ?? results.find((x) => x.name === k)
      if (r !== undefined) r.errorMessages.push(...msgs)
      else ownResults.push({ name: k, value: props[k] ?? null, recommendedValues: [], errorMessages: [...msgs], visible: true })
    }
  }
  for (const k of own.configKeys()) if (!keys.has(k.name)) keys.set(k.name, k)
  for (const g of own.groups()) if (!groups.includes(g)) groups.push(g)
  const all = [...results, ...ownResults]
  return {
    name: plugins.find(className)?.className ?? className,
    error_count: all.reduce((s, r) => s + r.errorMessages.length, 0),
    groups,
    configs: all.map((r) => {
      const k = keys.get(r.name)
      return {
        definition: k !== undefined ? configKeyInfo(k) : { name: r.name, type: 'STRING', required: false, default_value: null, importance: 'LOW', documentation: '', group: null, order_in_group: -1, width: 'NONE', display_name: r.name, dependents: [] },
        value: configValueInfo(k, r),
      }
    }),
  }
}

function sinkChecks(props: Record<string, string>, results: ConfigValueResult[]): void {
  const topics = (props['topics'] ?? '').split(',').map((t) => t.trim()).filter((t) => t !== '')
  const regex = props['topics.regex'] ?? ''
  const r = (name: string): ConfigValueResult => results.find((x) => x.name === name)!
  if (topics.length > 0 && regex !== '') {
    const msg = 'topics and topics.regex are mutually exclusive options, but both are set.'
    r('topics').errorMessages.push(msg)
    r('topics.regex').errorMessages.push(msg)
  } else if (topics.length === 0 && regex === '') {
    const msg = 'Must configure one of topics or topics.regex'
    r('topics').errorMessages.push(msg)
    r('topics.regex').errorMessages.push(msg)
  }
  const dlq = (props['errors.deadletterqueue.topic.name'] ?? '').trim()
  if (dlq !== '') {
    if (topics.includes(dlq)) r('topics').errorMessages.push(`The DLQ topic '${dlq}' may not be included in the list of topics ('topics=${topics.join(',')}') to be consumed.`)
    if (regex !== '' && new RegExp(`^(?:${regex})$`).test(dlq)) r('topics.regex').errorMessages.push(`The DLQ topic '${dlq}' may not be included in the regex matching the topics ('topics.regex=${regex}') to be consumed.`)
  }
}

// ---- the transformation chain ----

interface ChainStage {
  alias: string
  transform: Transformation
  predicate: Predicate | null
  negate: boolean
}

/** Kafka's TransformationChain: the transforms in order, each applied when its predicate (negated or not) holds. */
export class TransformationChain {
  constructor(readonly stages: ChainStage[]) {}

  static build(props: Record<string, string>, plugins: Plugins): TransformationChain {
    const predicates = new Map<string, Predicate>()
    for (const alias of (props['predicates'] ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '')) {
      const type = props[`predicates.${alias}.type`]
      if (type === undefined) throw new Error(`Missing required configuration "predicates.${alias}.type" which has no default value.`)
      const p = plugins.newPredicate(type)
      const conf = withPrefix(props, `predicates.${alias}.`)
      delete conf['type']
      p.configure(conf)
      predicates.set(alias, p)
    }
    const stages: ChainStage[] = []
    for (const alias of (props['transforms'] ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '')) {
      const type = props[`transforms.${alias}.type`]
      if (type === undefined) throw new Error(`Missing required configuration "transforms.${alias}.type" which has no default value.`)
      const t = plugins.newTransformation(type)
      const conf = withPrefix(props, `transforms.${alias}.`)
      const predAlias = conf['predicate']
      const negate = conf['negate'] === 'true'
      delete conf['type']
      delete conf['predicate']
      delete conf['negate']
      t.configure(conf)
      let predicate: Predicate | null = null
      if (predAlias !== undefined && predAlias !== '') {
        predicate = predicates.get(predAlias) ?? null
        if (predicate === null) throw new Error(`Transform ${alias} refers to predicate ${predAlias}, which is not listed in predicates`)
      }
      stages.push({ alias, transform: t, predicate, negate })
    }
    return new TransformationChain(stages)
  }

  get empty(): boolean {
    return this.stages.length === 0
  }

  close(): void {
    for (const s of this.stages) {
      try {
        s.transform.close?.()
        s.predicate?.close?.()
      } catch {
        // closing is best effort
      }
    }
  }
}

export type { ConnectRecord }
