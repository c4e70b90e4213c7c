// Static assets served from memory, compressed once when loaded: each file is kept as is, gzip'd and
// brotli'd (the smaller variants only when they are smaller), with a strong ETag over its content.
// The server picks the variant the client's Accept-Encoding allows (br over gzip) and answers
// If-None-Match with 304. Assets are small (a console's HTML, JS and CSS), so holding them is cheap and
// compressing them once beats compressing per request.
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { extname, join, relative, sep } from 'node:path'
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib'

export interface StaticAsset {
  contentType: string
  etag: string
  identity: Buffer
  gzip: Buffer | null
  br: Buffer | null
}

/** Assets by URL path relative to the prefix they are served under, e.g. "index.html", "js/app.js". */
export type StaticAssets = ReadonlyMap<string, StaticAsset>

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.map': 'application/json',
  '.woff2': 'font/woff2',
}

/** Types worth compressing (images and fonts are compressed already). */
const COMPRESSIBLE = /^(text\/|application\/json|image\/svg)/

export function contentTypeOf(path: string): string {
  return CONTENT_TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream'
}

/** One asset from its bytes: the compressed variants are kept only when they save something. */
export function staticAsset(body: Buffer, contentType: string): StaticAsset {
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`
  let gzip: Buffer | null = null
  let br: Buffer | null = null
  if (COMPRESSIBLE.test(contentType) && body.length > 256) {
    const g = gzipSync(body, { level: 9 })
    if (g.length < body.length) gzip = g
    const b = brotliCompressSync(body, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: body.length } })
    if (b.length < body.length) br = b
  }
  return { contentType, etag, identity: body, gzip, br }
}

/** Every file under dir (recursively), keyed by its path relative to dir with '/' separators. */
export function loadStaticAssets(dir: string): StaticAssets {
  const out = new Map<string, StaticAsset>()
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const full = join(d, name)
      if (statSync(full).isDirectory()) walk(full)
      else out.set(relative(dir, full).split(sep).join('/'), staticAsset(readFileSync(full), contentTypeOf(name)))
    }
  }
  walk(dir)
  return out
}

/** Assets from in-memory files (path -> content), for assets generated at start-up. */
export function staticAssetsFrom(files: Record<string, string | Buffer>): StaticAssets {
  const out = new Map<string, StaticAsset>()
  for (const [path, content] of Object.entries(files)) out.set(path.replace(/^\/+/, ''), staticAsset(Buffer.from(content), contentTypeOf(path)))
  return out
}

/** Which variant to send for an Accept-Encoding header: br, then gzip, else the identity. */
export function pickEncoding(asset: StaticAsset, acceptEncoding: string | undefined): { encoding: 'br' | 'gzip' | null; body: Buffer } {
  if (acceptEncoding !== undefined) {
    const accepted = new Map<string, number>()
    for (const part of acceptEncoding.split(',')) {
      const [name, ...params] = part.trim().toLowerCase().split(';')
      const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='))
      accepted.set(name!, q === undefined ? 1 : Number(q.slice(2)) || 0)
    }
    const ok = (name: string): boolean => (accepted.get(name) ?? accepted.get('*') ?? 0) > 0
    if (asset.br !== null && ok('br')) return { encoding: 'br', body: asset.br }
    if (asset.gzip !== null && ok('gzip')) return { encoding: 'gzip', body: asset.gzip }
  }
  return { encoding: null, body: asset.identity }
}
