import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { emitAll } from '../../scripts/gen-protocol/emit.js'
import { RECORD_SETS, emitRecordSets, generate, generateRecordSets } from '../../scripts/gen-protocol/main.js'
import { apiModuleFile, kebabCase, loadModel, loadRecordSet, parseMessage, parseVersions, stripComments } from '../../scripts/gen-protocol/model.js'
import { HAVE_SPECS, REPO, SPEC_FOLDERS, model } from './samples.js'

describe('spec model', () => {
  it('parses version ranges', () => {
    expect(parseVersions('3+', 'x')).toEqual({ min: 3, max: Infinity })
    expect(parseVersions('0-2', 'x')).toEqual({ min: 0, max: 2 })
    expect(parseVersions('4', 'x')).toEqual({ min: 4, max: 4 })
    expect(parseVersions('none', 'x').min).toBeGreaterThan(parseVersions('none', 'x').max)
    expect(() => parseVersions('1-', 'x')).toThrow()
  })

  it('strips // comments but not // inside strings', () => {
    expect(stripComments('{ "a": "http://x" } // note')).toBe('{ "a": "http://x" } ')
  })

  it('parses defaults: null, booleans, hex, negatives, int64', () => {
    const msg = parseMessage(
      `// c
      { "type": "data", "name": "T", "validVersions": "0-1", "flexibleVersions": "1+", "fields": [
        { "name": "A", "type": "int32", "versions": "0+", "default": "0x7fffffff" },
        { "name": "B", "type": "int64", "versions": "0+", "default": -1 },
        { "name": "C", "type": "string", "versions": "0+", "nullableVersions": "1+", "default": "null" },
        { "name": "D", "type": "bool", "versions": "0+", "default": "true" },
        { "name": "E", "type": "int32", "versions": "0+", "default": "-2147483648" },
        { "name": "F", "type": "[]G", "versions": "1+", "taggedVersions": "1+", "tag": 0, "fields": [
          { "name": "H", "type": "uuid", "versions": "1+" } ] }
      ] }`,
      'T.json',
    )
    expect(msg.root.fields.map((f) => f.default)).toEqual([
      { kind: 'number', value: 2147483647 },
      { kind: 'bigint', value: -1n },
      { kind: 'null' },
      { kind: 'bool', value: true },
      { kind: 'number', value: -2147483648 },
      { kind: 'array' },
    ])
    expect(msg.structs.map((s) => s.name)).toEqual(['G'])
    expect(msg.root.fields[5]!.tag).toBe(0)
  })

  it('rejects inconsistent specs', () => {
    const bad = (fields: string): (() => unknown) => () =>
      parseMessage(`{ "type": "data", "name": "T", "validVersions": "0", "flexibleVersions": "none", "fields": [${fields}] }`, 'T.json')
    expect(bad('{ "name": "A", "type": "int32", "versions": "0+", "nullableVersions": "0+" }')).toThrow(/cannot be nullable/)
    expect(bad('{ "name": "A", "type": "int8", "versions": "0+", "default": "300" }')).toThrow(/range/)
    expect(bad('{ "name": "A", "type": "Missing", "versions": "0+" }')).toThrow(/commonStruct/)
    expect(bad('{ "name": "A", "type": "int32", "versions": "0+", "tag": 1 }')).toThrow(/tag/)
  })

  it.skipIf(!HAVE_SPECS)('names modules by key and kebab-case name', () => {
    expect(kebabCase('DescribeCluster')).toBe('describe-cluster')
    expect(kebabCase('ApiVersions')).toBe('api-versions')
    const m = model()
    expect(m.apis.map(apiModuleFile)).toContain('60-describe-cluster.gen.ts')
    expect(m.apis.map(apiModuleFile)).toContain('00-produce.gen.ts')
    expect(m.apis).toHaveLength(67) // 52 from ../shared/kafka-protocol, 15 from scripts/kafka-protocol-extra
    expect(m.apis.map(apiModuleFile)).toContain('04-leader-and-isr.gen.ts')
    expect(m.data.map((d) => d.name).sort()).toEqual(['ConsumerProtocolAssignment', 'ConsumerProtocolSubscription', 'ControlRecordType', 'EndTxnMarker', 'LeaderChangeMessage'])
  })

  it.skipIf(!HAVE_SPECS)('renames structs defined by both request and response with a Request/Response prefix', () => {
    const api = model().apis.find((a) => a.name === 'AlterClientQuotas')!
    expect(api.request.structs.map((s) => s.tsName)).toContain('RequestEntityData')
    expect(api.response.structs.map((s) => s.tsName)).toContain('ResponseEntityData')
    // Names used by only one side stay as in the spec.
    expect(api.request.structs.map((s) => s.tsName)).toContain('OpData')
  })

  it.skipIf(!HAVE_SPECS)('resolves commonStructs', () => {
    const lcm = model().data.find((d) => d.name === 'LeaderChangeMessage')!
    const voters = lcm.root.fields.find((f) => f.name === 'Voters')!
    const granting = lcm.root.fields.find((f) => f.name === 'GrantingVoters')!
    expect(voters.type).toEqual(granting.type)
    expect(lcm.structs.map((s) => s.name)).toEqual(['Voter'])
  })
})

describe.skipIf(!HAVE_SPECS)('generator output', () => {
  it('is deterministic and matches the committed files', () => {
    const a = emitAll(loadModel(SPEC_FOLDERS))
    const b = emitAll(loadModel(SPEC_FOLDERS))
    expect(a).toEqual(b)
    for (const f of a) {
      expect(readFileSync(join(REPO, 'src', 'protocol', f.path), 'utf8'), f.path).toBe(f.text)
      expect(f.text).toMatch(/^\/\/ GENERATED by scripts\/gen-protocol from (shared\/kafka-protocol|scripts\/kafka-protocol-extra)\//)
    }
    // The APIs of the repo's extra folder name it as their source.
    const heartbeat = a.find((f) => f.path === 'messages/68-consumer-group-heartbeat.gen.ts')!
    expect(heartbeat.text.split('\n')[0]).toBe(
      '// GENERATED by scripts/gen-protocol from scripts/kafka-protocol-extra/ConsumerGroupHeartbeatRequest.json and scripts/kafka-protocol-extra/ConsumerGroupHeartbeatResponse.json. DO NOT EDIT.',
    )
  })

  it('refuses a message described in two folders', () => {
    const dir = mkdtempSync(join(tmpdir(), 'skein-gen-twice-'))
    try {
      writeFileSync(join(dir, 'ConsumerGroupDescribeRequest.json'), readFileSync(join(REPO, 'scripts/kafka-protocol-extra/ConsumerGroupDescribeRequest.json')))
      expect(() => loadModel([...SPEC_FOLDERS, { dir, label: 'elsewhere' }])).toThrow(/ConsumerGroupDescribeRequest.json is in both scripts\/kafka-protocol-extra and elsewhere/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('writes into another folder', () => {
    const dir = mkdtempSync(join(tmpdir(), 'skein-gen-'))
    try {
      const files = generate(SPEC_FOLDERS, dir)
      expect(files).toContain('api-keys.gen.ts')
      expect(readFileSync(join(dir, 'messages', '00-produce.gen.ts'), 'utf8')).toContain('export function encodeProduceRequest(w: Writer, msg: ProduceRequest, version: number): void')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('coordinator record sets', () => {
  it('pairs keys with values, ordered by the key version that names the record type', () => {
    const group = loadRecordSet(join(REPO, 'scripts/coordinator-records/group-coordinator'), 'group-coordinator')
    expect(group.name).toBe('GroupCoordinator')
    expect(group.types.map((t) => [t.name, t.key.validVersions, t.value.validVersions])).toEqual([
      ['OffsetCommit', { min: 0, max: 1 }, { min: 0, max: 4 }],
      ['GroupMetadata', { min: 2, max: 2 }, { min: 0, max: 4 }],
      ['ConsumerGroupMetadata', { min: 3, max: 3 }, { min: 0, max: 0 }],
      ['ConsumerGroupPartitionMetadata', { min: 4, max: 4 }, { min: 0, max: 0 }],
      ['ConsumerGroupMemberMetadata', { min: 5, max: 5 }, { min: 0, max: 0 }],
      ['ConsumerGroupTargetAssignmentMetadata', { min: 6, max: 6 }, { min: 0, max: 0 }],
      ['ConsumerGroupTargetAssignmentMember', { min: 7, max: 7 }, { min: 0, max: 0 }],
      ['ConsumerGroupCurrentMemberAssignment', { min: 8, max: 8 }, { min: 0, max: 0 }],
      ['ShareGroupPartitionMetadata', { min: 9, max: 9 }, { min: 0, max: 0 }],
      ['ShareGroupMemberMetadata', { min: 10, max: 10 }, { min: 0, max: 0 }],
      ['ShareGroupMetadata', { min: 11, max: 11 }, { min: 0, max: 0 }],
      ['ShareGroupTargetAssignmentMetadata', { min: 12, max: 12 }, { min: 0, max: 0 }],
      ['ShareGroupTargetAssignmentMember', { min: 13, max: 13 }, { min: 0, max: 0 }],
      ['ShareGroupCurrentMemberAssignment', { min: 14, max: 14 }, { min: 0, max: 0 }],
      ['ShareGroupStatePartitionMetadata', { min: 15, max: 15 }, { min: 0, max: 0 }],
    ])
    const txn = loadRecordSet(join(REPO, 'scripts/coordinator-records/transaction-coordinator'), 'transaction-coordinator')
    expect(txn.types.map((t) => t.name)).toEqual(['TransactionLog'])
  })

  it('rejects overlapping key versions, a key without a value, and non-data definitions', () => {
    const dir = mkdtempSync(join(tmpdir(), 'skein-records-'))
    const def = (name: string, versions: string, type = 'data'): void =>
      writeFileSync(join(dir, `${name}.json`), `{ "type": "${type}", "name": "${name}", "validVersions": "${versions}", "flexibleVersions": "none", "fields": [] }`)
    try {
      def('AKey', '0-1')
      def('AValue', '0')
      def('BKey', '1')
      def('BValue', '0')
      expect(() => loadRecordSet(dir, 'x')).toThrow(/overlap/)
      def('BKey', '2')
      expect(loadRecordSet(dir, 'x').types.map((t) => t.name)).toEqual(['A', 'B'])
      rmSync(join(dir, 'BValue.json'))
      expect(() => loadRecordSet(dir, 'x')).toThrow(/no BValue/)
      def('BValue', '0', 'request')
      expect(() => loadRecordSet(dir, 'x')).toThrow(/data message/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('generates the committed codecs, headed with their definition files', () => {
    const files = emitRecordSets(REPO)
    expect(files.map((f) => f.path)).toContain('src/coordinator/group/generated/records.gen.ts')
    expect(files.map((f) => f.path)).toContain('src/coordinator/transaction/generated/transaction-log-value.gen.ts')
    for (const f of files) {
      expect(readFileSync(join(REPO, f.path), 'utf8'), f.path).toBe(f.text)
      expect(f.text.startsWith('// GENERATED by scripts/gen-protocol from scripts/coordinator-records/')).toBe(true)
    }
    expect(RECORD_SETS.map((l) => l.outDir)).toEqual(['src/coordinator/group/generated', 'src/coordinator/transaction/generated', 'src/coordinator/share/generated'])
  })

  it('writes into another folder and drops files no definition makes any more', () => {
    const dir = mkdtempSync(join(tmpdir(), 'skein-gen-records-'))
    try {
      generateRecordSets(REPO, dir)
      const stale = join(dir, 'src/coordinator/group/generated/removed-key.gen.ts')
      writeFileSync(stale, '')
      const written = generateRecordSets(REPO, dir)
      expect(written).toContain('src/coordinator/group/generated/offset-commit-value.gen.ts')
      expect(() => readFileSync(stale)).toThrow()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
