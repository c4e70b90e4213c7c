// Mounts a process's /metrics, /health and /ready (observability/health-endpoints.ts) on one of its
// HTTP servers: the REST Proxy's, the Schema Registry's, or both inside a broker.
import type { HealthEndpoints } from '../observability/health-endpoints.js'
import { HEALTH_PATHS } from '../observability/health-endpoints.js'
import type { HttpServer } from './types.js'

export function mountHealthEndpoints(server: HttpServer, endpoints: HealthEndpoints): void {
  for (const path of HEALTH_PATHS) {
    server.route('GET', path, async (_req, res) => {
      const answer = await endpoints.answer(path)
      res.send(answer.status, answer.headers, answer.body)
    })
  }
}
