// The built-in single message transforms and predicates, under Kafka's class names
// (org.apache.kafka.connect.transforms.X$Key / X$Value); the simple names are aliases, as in Kafka.
import type { PluginDescriptor } from '../api/plugin.js'
import { Cast, ExtractField, HeaderFrom, InsertField, MaskField, ReplaceField, TimestampConverter, ValueToKey } from './fields.js'
import { DropHeaders, Filter, HasHeaderKey, InsertHeader, RecordIsTombstone, RegexRouter, TimestampRouter, TopicNameMatches } from './routing.js'

export * from './fields.js'
export * from './routing.js'
export { compileDatePattern, formatDate, parseDate } from './util.js'

const PKG = 'org.apache.kafka.connect.transforms'
const VERSION = '1.0.0'

function sided(name: string, make: (side: 'key' | 'value') => InsertField | ReplaceField | MaskField | ExtractField | Cast | TimestampConverter | HeaderFrom): PluginDescriptor[] {
  return [
    { className: `${PKG}.${name}$Key`, kind: 'transformation', aliases: [`${name}$Key`], version: VERSION, create: () => make('key') },
    { className: `${PKG}.${name}$Value`, kind: 'transformation', aliases: [`${name}$Value`], version: VERSION, create: () => make('value') },
  ]
}

function plain(name: string, kind: 'transformation' | 'predicate', create: PluginDescriptor['create'], pkg = PKG): PluginDescriptor {
  return { className: `${pkg}.${name}`, kind, aliases: [name], version: VERSION, create }
}

export const TRANSFORM_PLUGINS: readonly PluginDescriptor[] = [
  ...sided('InsertField', (s) => new InsertField(s)),
  ...sided('ReplaceField', (s) => new ReplaceField(s)),
  ...sided('MaskField', (s) => new MaskField(s)),
  ...sided('ExtractField', (s) => new ExtractField(s)),
  ...sided('Cast', (s) => new Cast(s)),
  ...sided('TimestampConverter', (s) => new TimestampConverter(s)),
  ...sided('HeaderFrom', (s) => new HeaderFrom(s)),
  plain('ValueToKey', 'transformation', () => new ValueToKey()),
  plain('RegexRouter', 'transformation', () => new RegexRouter()),
  plain('TimestampRouter', 'transformation', () => new TimestampRouter()),
  plain('Filter', 'transformation', () => new Filter()),
  plain('InsertHeader', 'transformation', () => new InsertHeader()),
  plain('DropHeaders', 'transformation', () => new DropHeaders()),
  plain('TopicNameMatches', 'predicate', () => new TopicNameMatches(), `${PKG}.predicates`),
  plain('HasHeaderKey', 'predicate', () => new HasHeaderKey(), `${PKG}.predicates`),
  plain('RecordIsTombstone', 'predicate', () => new RecordIsTombstone(), `${PKG}.predicates`),
]
