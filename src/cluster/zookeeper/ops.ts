// Builders for multi operations, so that call sites read like ZooKeeper's Op.check / Op.create / ... .
// Versions are passed through untouched: 0 means version 0, only -1 (ANY_VERSION) means any.
import { CreateMode, type ACL, type MultiOp } from './protocol.js'

type Data = Buffer | string

function bytes(data: Data): Buffer {
  return typeof data === 'string' ? Buffer.from(data, 'utf8') : data
}

export const Op = {
  check: (path: string, version: number): MultiOp => ({ type: 'check', path, version }),
  create: (path: string, data: Data, mode: CreateMode = CreateMode.PERSISTENT, acl?: readonly ACL[]): MultiOp => ({ type: 'create', path, data: bytes(data), mode, acl }),
  setData: (path: string, data: Data, version: number): MultiOp => ({ type: 'setData', path, data: bytes(data), version }),
  delete: (path: string, version: number): MultiOp => ({ type: 'delete', path, version }),
}
