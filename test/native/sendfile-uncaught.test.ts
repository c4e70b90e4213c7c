// A sendfile callback that throws must surface as an uncaught exception (as any Node I/O callback
// does), not be swallowed and not abort the process. Run in a child process so the throw is contained.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { nativeCandidates } from '../../src/addon/index.js'

describe('sendfile callback that throws', () => {
  it('reaches process.on("uncaughtException")', () => {
    const addon = nativeCandidates().find((p) => existsSync(p))!
    const script = `
      const native = require(${JSON.stringify(addon)})
      const net = require('node:net')
      const fs = require('node:fs')
      const os = require('node:os')
      const path = require('node:path')
      const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'skein-throw-')), 'f')
      fs.writeFileSync(file, 'x'.repeat(100))
      const fd = fs.openSync(file, 'r')
      process.on('uncaughtException', (err) => {
        console.log('caught:' + err.message)
        fs.rmSync(path.dirname(file), { recursive: true })
        process.exit(0)
      })
      const server = net.createServer((s) => {
        native.sendfile(s._handle.fd, fd, 0, 100, (err, sent) => {
          console.log('sent:' + sent)
          throw new Error('boom from callback')
        })
      })
      server.listen(0, '127.0.0.1', () => net.connect(server.address().port, '127.0.0.1'))
    `
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 })
    expect(r.stderr).toBe('')
    expect(r.stdout).toContain('sent:100')
    expect(r.stdout).toContain('caught:boom from callback')
    expect(r.status).toBe(0)
  })
})
