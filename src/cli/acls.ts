// `skein acls`: kafka-acls. Adds, removes and lists ACLs through CreateAcls, DeleteAcls and DescribeAcls
// with kafka-acls' flags: principals and hosts to allow or deny, operations (repeatable; All when none
// is given to --add), resources (--topic, --group, --cluster, --transactional-id, each repeatable), the
// pattern type, and the --producer / --consumer conveniences. --remove asks for confirmation unless
// --force. The output follows kafka-acls' ("Current ACLs for resource `ResourcePattern(...)`:"), as
// scripts read it.
import { createInterface } from 'node:readline'
import { Admin } from '../client/admin.js'
import {
  AclOperation,
  AclPermission,
  CLUSTER_NAME,
  OPERATION_NAMES,
  PatternType,
  ResourceType,
  type AclBinding,
  type AclFilter,
} from '../domain/acl.js'
import { KafkaError, type ErrorCode } from '../domain/errors.js'
import { UsageError, type CommandSpec, type ParsedArgs } from './args.js'
import { adminOptions, BOOTSTRAP_OPTION, COMMAND_CONFIG_OPTION, COMMAND_PROPERTY_OPTION, oneAction, runCommand } from './common.js'

const SPEC: CommandSpec = {
  command: 'skein acls',
  usage: 'skein acls [--bootstrap-server HOST:PORT] --add|--remove|--list [resources] [principals] [options]',
  summary: 'Add, remove and list ACLs (kafka-acls).',
  options: [
    BOOTSTRAP_OPTION,
    COMMAND_CONFIG_OPTION,
    COMMAND_PROPERTY_OPTION,
    { name: 'add', desc: 'Add ACLs' },
    { name: 'remove', desc: 'Remove ACLs (all of a resource when no principal or operation is given)' },
    { name: 'list', desc: 'List ACLs (of the given resources, else all; --principal filters)' },
    { name: 'topic', value: 'TOPIC', repeat: true, desc: "A topic resource ('*' for all topics)" },
    { name: 'group', value: 'GROUP', repeat: true, desc: "A consumer group resource ('*' for all groups)" },
    { name: 'cluster', desc: 'The cluster resource' },
    { name: 'transactional-id', value: 'ID', repeat: true, desc: "A transactional id resource ('*' for all)" },
    { name: 'resource-pattern-type', value: 'TYPE', desc: 'LITERAL (default) or PREFIXED; --list and --remove also take ANY and MATCH' },
    { name: 'allow-principal', value: 'PRINCIPAL', repeat: true, desc: "A principal to allow, e.g. User:alice ('User:*' for everyone)" },
    { name: 'deny-principal', value: 'PRINCIPAL', repeat: true, desc: 'A principal to deny' },
    { name: 'allow-host', value: 'HOST', repeat: true, desc: "A host the allowed principals may connect from (default '*')" },
    { name: 'deny-host', value: 'HOST', repeat: true, desc: "A host the denied principals are denied from (default '*')" },
    { name: 'principal', value: 'PRINCIPAL', repeat: true, desc: 'With --list: only the ACLs of this principal' },
    { name: 'operation', value: 'OPERATION', repeat: true, desc: 'Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, CreateTokens, DescribeTokens or All (default All)' },
    { name: 'producer', desc: 'The ACLs of a producer: Write, Describe, Create on the topics; with --transactional-id Write, Describe on it; with --idempotent IdempotentWrite on the cluster' },
    { name: 'consumer', desc: 'The ACLs of a consumer: Read, Describe on the topics, Read on the groups (--group is required)' },
    { name: 'idempotent', desc: 'With --producer: IdempotentWrite on the cluster too' },
    { name: 'force', desc: 'Do not ask before removing' },
  ],
  notes: `Examples:
  skein acls --add --allow-principal User:alice --operation Read --topic orders --group billing
  skein acls --add --allow-principal User:app --producer --topic events --transactional-id app-tx
  skein acls --add --deny-principal User:mallory --operation All --topic '*'
  skein acls --list --topic orders
  skein acls --remove --force --allow-principal User:alice --operation Read --topic orders`,
}

const OPERATIONS: Readonly<Record<string, number>> = Object.fromEntries(Object.entries(OPERATION_NAMES).map(([code, name]) => [name.toLowerCase(), Number(code)]))
const TYPE_NAMES: Readonly<Record<number, string>> = { 2: 'TOPIC', 3: 'GROUP', 4: 'CLUSTER', 5: 'TRANSACTIONAL_ID', 6: 'DELEGATION_TOKEN', 7: 'USER' }
const PATTERN_NAMES: Readonly<Record<number, string>> = { 1: 'ANY', 2: 'MATCH', 3: 'LITERAL', 4: 'PREFIXED' }

interface Resource {
  resourceType: number
  name: string
}

function parseOperation(text: string): number {
  const op = OPERATIONS[text.trim().toLowerCase().replace(/[_-]/g, '')]
  if (op === undefined) throw new UsageError(`--operation ${text}: expected one of ${Object.values(OPERATION_NAMES).join(', ')}`)
  return op
}

function parsePrincipal(text: string): string {
  if (!/^[^:]+:.+$/.test(text)) throw new UsageError(`principal '${text}' must be TYPE:NAME, e.g. User:alice`)
  return text
}

function patternType(args: ParsedArgs, action: string): number {
  const text = (args.get('resource-pattern-type') ?? 'LITERAL').trim().toUpperCase()
  const code = Number(Object.entries(PATTERN_NAMES).find(([, n]) => n === text)?.[0])
  if (Number.isNaN(code)) throw new UsageError(`--resource-pattern-type ${text}: expected LITERAL, PREFIXED, ANY or MATCH`)
  if (action === 'add' && code !== PatternType.LITERAL && code !== PatternType.PREFIXED) throw new UsageError('--add takes --resource-pattern-type LITERAL or PREFIXED')
  return code
}

function resources(args: ParsedArgs): Resource[] {
  const out: Resource[] = []
  for (const name of args.all('topic')) out.push({ resourceType: ResourceType.TOPIC, name })
  for (const name of args.all('group')) out.push({ resourceType: ResourceType.GROUP, name })
  for (const name of args.all('transactional-id')) out.push({ resourceType: ResourceType.TRANSACTIONAL_ID, name })
  if (args.has('cluster')) out.push({ resourceType: ResourceType.CLUSTER, name: CLUSTER_NAME })
  for (const r of out) if (r.name === '') throw new UsageError('a resource name must not be empty')
  return out
}

/** The operations per resource, from --operation or the --producer / --consumer conveniences (kafka-acls' rules). */
function operationsFor(args: ParsedArgs, list: readonly Resource[], action: string): Map<Resource, number[]> {
  const producer = args.has('producer')
  const consumer = args.has('consumer')
  const explicit = args.all('operation').map(parseOperation)
  const out = new Map<Resource, number[]>()
  if (!producer && !consumer) {
    const ops = explicit.length > 0 ? explicit : action === 'add' ? [AclOperation.ALL] : [AclOperation.ANY]
    for (const r of list) out.set(r, ops)
    return out
  }
  if (explicit.length > 0) throw new UsageError('--operation cannot be combined with --producer or --consumer')
  if (producer && list.every((r) => r.resourceType !== ResourceType.TOPIC)) throw new UsageError('--producer needs --topic')
  if (consumer && (list.every((r) => r.resourceType !== ResourceType.TOPIC) || list.every((r) => r.resourceType !== ResourceType.GROUP))) throw new UsageError('--consumer needs --topic and --group')
  const add = (r: Resource, ops: number[]): void => {
    out.set(r, [...new Set([...(out.get(r) ?? []), ...ops])])
  }
  for (const r of list) {
    if (r.resourceType === ResourceType.TOPIC) {
      if (producer) add(r, [AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE])
      if (consumer) add(r, [AclOperation.READ, AclOperation.DESCRIBE])
    } else if (r.resourceType === ResourceType.GROUP && consumer) add(r, [AclOperation.READ])
    else if (r.resourceType === ResourceType.TRANSACTIONAL_ID && producer) add(r, [AclOperation.WRITE, AclOperation.DESCRIBE])
  }
  if (producer && args.has('idempotent')) add({ resourceType: ResourceType.CLUSTER, name: CLUSTER_NAME }, [AclOperation.IDEMPOTENT_WRITE])
  return out
}

/** (principal, host, permission) triples from --allow-principal/--allow-host and --deny-principal/--deny-host. */
function entries(args: ParsedArgs): { principal: string; host: string; permission: number }[] {
  const out: { principal: string; host: string; permission: number }[] = []
  const allowHosts = args.all('allow-host')
  const denyHosts = args.all('deny-host')
  if (allowHosts.length > 0 && args.all('allow-principal').length === 0) throw new UsageError('--allow-host needs --allow-principal')
  if (denyHosts.length > 0 && args.all('deny-principal').length === 0) throw new UsageError('--deny-host needs --deny-principal')
  for (const p of args.all('allow-principal')) for (const host of allowHosts.length > 0 ? allowHosts : ['*']) out.push({ principal: parsePrincipal(p), host, permission: AclPermission.ALLOW })
  for (const p of args.all('deny-principal')) for (const host of denyHosts.length > 0 ? denyHosts : ['*']) out.push({ principal: parsePrincipal(p), host, permission: AclPermission.DENY })
  return out
}

const patternText = (resourceType: number, name: string, pattern: number): string => `ResourcePattern(resourceType=${TYPE_NAMES[resourceType] ?? resourceType}, name=${name}, patternType=${PATTERN_NAMES[pattern] ?? pattern})`
const entryText = (b: AclBinding): string =>
  `(principal=${b.principal}, host=${b.host}, operation=${(OPERATION_NAMES[b.operation] ?? String(b.operation)).replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase()}, permissionType=${b.permission === AclPermission.ALLOW ? 'ALLOW' : 'DENY'})`

/** Prints bindings grouped by resource pattern, as kafka-acls does. */
function printByResource(heading: string, bindings: readonly AclBinding[]): void {
  const groups = new Map<string, AclBinding[]>()
  for (const b of bindings) {
    const key = patternText(b.resourceType, b.resourceName, b.patternType)
    groups.set(key, [...(groups.get(key) ?? []), b])
  }
  for (const [key, list] of groups) {
    process.stdout.write(`${heading} \`${key}\`: \n${list.map((b) => ` \t${entryText(b)} `).join('\n')}\n\n`)
  }
}

const anyFilter = (r: Resource | undefined, pattern: number): AclFilter => ({
  resourceType: r?.resourceType ?? ResourceType.ANY,
  resourceName: r?.name ?? null,
  patternType: pattern,
  principal: null,
  host: null,
  operation: AclOperation.ANY,
  permission: AclPermission.ANY,
})

async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr })
  try {
    const answer = await new Promise<string>((resolve) => {
      rl.question(`${question} (y/n)\n`, resolve)
      rl.once('close', () => resolve(''))
    })
    return answer.trim().toLowerCase().startsWith('y')
  } finally {
    rl.close()
  }
}

export function runAcls(argv: readonly string[]): Promise<number> {
  return runCommand(SPEC, argv, async (args) => {
    const action = oneAction(args, ['add', 'remove', 'list'])
    const pattern = patternType(args, action)
    const list = resources(args)
    const admin = new Admin(adminOptions(args, 'skein acls', 'skein-acls'))
    try {
      if (action === 'list') {
        const principals = args.all('principal').map(parsePrincipal)
        const filters = list.length > 0 ? list.map((r) => anyFilter(r, args.has('resource-pattern-type') ? pattern : PatternType.ANY)) : [anyFilter(undefined, PatternType.ANY)]
        const found: AclBinding[] = []
        for (const f of filters) {
          if (principals.length === 0) found.push(...(await admin.describeAcls(f)))
          else for (const principal of principals) found.push(...(await admin.describeAcls({ ...f, principal })))
        }
        printByResource('Current ACLs for resource', found)
        return 0
      }
      if (list.length === 0) throw new UsageError(`--${action} needs a resource: --topic, --group, --cluster or --transactional-id`)
      const ops = operationsFor(args, list, action)
      const who = entries(args)
      if (action === 'add') {
        if (who.length === 0) throw new UsageError('--add needs --allow-principal or --deny-principal')
        const bindings: AclBinding[] = []
        for (const [r, operations] of ops) for (const e of who) for (const operation of operations) bindings.push({ resourceType: r.resourceType, resourceName: r.name, patternType: pattern, principal: e.principal, host: e.host, operation, permission: e.permission })
        printByResource('Adding ACLs for resource', bindings)
        const outcomes = await admin.createAcls(bindings)
        const failed = outcomes.map((o, i) => ({ o, b: bindings[i]! })).filter(({ o }) => o.errorCode !== 0)
        for (const { o, b } of failed) process.stderr.write(`Error while adding ACL ${entryText(b)} on ${patternText(b.resourceType, b.resourceName, b.patternType)}: ${new KafkaError(o.errorCode as ErrorCode, o.errorMessage ?? '').message}\n`)
        for (const r of ops.keys()) printByResource('Current ACLs for resource', await admin.describeAcls(anyFilter(r, pattern)))
        return failed.length === 0 ? 0 : 1
      }
      // --remove: without principals every ACL of the resources (of the operations, if given).
      const filters: AclFilter[] = []
      for (const [r, operations] of ops) {
        for (const operation of operations) {
          if (who.length === 0) filters.push({ ...anyFilter(r, pattern), operation })
          else for (const e of who) filters.push({ ...anyFilter(r, pattern), principal: e.principal, host: e.host, permission: e.permission, operation })
        }
      }
      if (!args.has('force')) {
        const what = [...ops.keys()].map((r) => patternText(r.resourceType, r.name, pattern)).join(', ')
        if (!(await confirm(`Are you sure you want to remove ACLs from resource filter(s) ${what}?`))) {
          process.stderr.write('Nothing removed.\n')
          return 1
        }
      }
      const removed = (await admin.deleteAcls(filters)).flat()
      printByResource('Removed ACLs for resource', removed)
      return 0
    } finally {
      await admin.close()
    }
  })
}
