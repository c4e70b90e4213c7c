// Loads each generated module by the file name the model says it has.

import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { apiModuleFile, messageModuleFile, type ApiSpec, type MessageSpec } from '../../scripts/gen-protocol/model.js'
import type { Reader } from '../../src/protocol/primitives/reader.js'
import type { Writer } from '../../src/protocol/primitives/writer.js'
import { REPO } from './samples.js'

export interface MessageCodec {
  msg: MessageSpec
  encode(w: Writer, m: object, version: number): void
  decode(r: Reader, version: number): object
  create(): Record<string, unknown>
}

type Module = Record<string, unknown>

async function load(file: string): Promise<Module> {
  return (await import(pathToFileURL(join(REPO, 'src', 'protocol', 'messages', file)).href)) as Module
}

function codec(mod: Module, msg: MessageSpec): MessageCodec {
  const encode = mod[`encode${msg.name}`]
  const decode = mod[`decode${msg.name}`]
  const create = mod[`create${msg.root.tsName}`]
  if (typeof encode !== 'function' || typeof decode !== 'function' || typeof create !== 'function') throw new Error(`missing exports for ${msg.name}`)
  return { msg, encode: encode as MessageCodec['encode'], decode: decode as MessageCodec['decode'], create: create as MessageCodec['create'] }
}

export async function apiCodecs(api: ApiSpec): Promise<{ module: Module; request: MessageCodec; response: MessageCodec }> {
  const mod = await load(apiModuleFile(api))
  return { module: mod, request: codec(mod, api.request), response: codec(mod, api.response) }
}

export async function messageCodec(msg: MessageSpec): Promise<MessageCodec> {
  return codec(await load(messageModuleFile(msg)), msg)
}
