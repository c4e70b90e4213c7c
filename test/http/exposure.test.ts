// Standalone HTTP services bind loopback unless told otherwise and say who can reach them (issue 31).
import { describe, expect, it } from 'vitest'
import { parseRegistryProperties, registrySettings } from '../../src/config/client-registry.js'
import { parseRestProperties, restSettings } from '../../src/config/client-rest.js'
import { parseWorkerConfig, restListeners } from '../../src/connect/runtime/worker-config.js'
import { exposureNotice, isLoopbackHost } from '../../src/http/index.js'

describe('HTTP exposure', () => {
  it('standalone REST Proxy, Schema Registry and Connect default to loopback listeners', () => {
    expect(restSettings(parseRestProperties([])).listeners).toEqual(['http://127.0.0.1:8082'])
    expect(registrySettings(parseRegistryProperties([])).listeners).toEqual(['http://127.0.0.1:8081'])
    const props = { 'bootstrap.servers': '127.0.0.1:9092', 'group.id': 'g', 'config.storage.topic': 'c', 'offset.storage.topic': 'o', 'status.storage.topic': 's', 'key.converter': 'org.apache.kafka.connect.storage.StringConverter', 'value.converter': 'org.apache.kafka.connect.storage.StringConverter' }
    for (const l of restListeners(parseWorkerConfig('distributed', props))) expect(isLoopbackHost(new URL(l).hostname)).toBe(true)
  })

  it('names loopback listeners as such and warns for every listener other hosts reach without authentication', () => {
    let n = exposureNotice('REST Proxy', ['http://127.0.0.1:8082', 'http://[::1]:8082'])
    expect(n.line).toBe('REST Proxy listening on http://127.0.0.1:8082, http://[::1]:8082 (loopback only: set listeners to serve other hosts)')
    expect(n.warnings).toEqual([])
    n = exposureNotice('Schema Registry', ['http://127.0.0.1:8081', 'http://0.0.0.0:8081'])
    expect(n.line).toBe('Schema Registry listening on http://127.0.0.1:8081, http://0.0.0.0:8081')
    expect(n.warnings).toHaveLength(1)
    expect(n.warnings[0]).toMatch(/^WARNING: Schema Registry listens on http:\/\/0.0.0.0:8081, reachable from other hosts, without authentication/)
    // With BASIC authentication nobody reaches it without credentials: no warning.
    n = exposureNotice('REST Proxy', ['http://0.0.0.0:8082'], true)
    expect(n.warnings).toEqual([])
    expect(n.line).toBe('REST Proxy listening on http://0.0.0.0:8082')
    // Client certificates REQUIRED gate the https listeners only.
    n = exposureNotice('REST Proxy', ['https://0.0.0.0:8443', 'http://0.0.0.0:8082'], false, true)
    expect(n.warnings).toHaveLength(1)
    expect(n.warnings[0]).toMatch(/^WARNING: REST Proxy listens on http:\/\/0.0.0.0:8082,/)
  })
})
