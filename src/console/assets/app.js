// Skein console: a small single-page app over /console/api (JSON) and /ws/topics (live tail).
// Plain JavaScript modules, no framework and no build step; pages are rendered from template strings
// with every value escaped, and charts are drawn on canvases.

const API = '/console/api'
const main = document.getElementById('main')

// ----------------------------------------------------------------------------------------------------
// Helpers

const esc = (v) => String(v ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c])
const fmtInt = (n) => (n === null || n === undefined ? '–' : Number(n).toLocaleString('en-US'))
function fmtBytes(n) {
  if (n === null || n === undefined) return '–'
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
  let i = 0
  let v = Number(n)
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024
    i++
  }
  return `${v >= 100 || i === 0 ? Math.round(v) : v.toFixed(1)} ${units[i]}`
}
function fmtRate(n, bytes) {
  if (n === null || n === undefined || Number.isNaN(n)) return '–'
  return bytes ? `${fmtBytes(n)}/s` : `${n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(1)}/s`
}
const fmtTime = (ms) => (ms < 0 ? '–' : new Date(ms).toISOString().replace('T', ' ').replace('Z', ''))

async function api(path, init) {
  const res = await fetch(API + path, init)
  if (res.status === 204) return null
  const body = await res.json().catch(() => null)
  if (!res.ok) throw new Error(body?.message ?? `HTTP ${res.status}`)
  return body
}

function toast(text) {
  const t = document.getElementById('toast')
  t.textContent = text
  t.classList.add('show')
  clearTimeout(toast.timer)
  toast.timer = setTimeout(() => t.classList.remove('show'), 2500)
}

function showError(err) {
  main.insertAdjacentHTML('afterbegin', `<div class="error">${esc(err.message ?? err)}</div>`)
}

/** Things a page started (timers, sockets) are stopped when another page is shown. */
let cleanups = []
function onLeave(fn) {
  cleanups.push(fn)
}
function every(ms, fn) {
  const id = setInterval(fn, ms)
  onLeave(() => clearInterval(id))
}

// ----------------------------------------------------------------------------------------------------
// Charts: a line chart of a few series over a time axis, on a canvas sized to its box.

const COLORS = ['#1f6feb', '#2da44e', '#bf8700', '#cf222e', '#8250df', '#1b7c83']

function drawChart(canvas, series, { format = (v) => fmtInt(v), span = 60 } = {}) {
  const dpr = window.devicePixelRatio || 1
  const w = canvas.clientWidth
  const h = canvas.clientHeight
  if (w === 0 || h === 0) return
  canvas.width = Math.round(w * dpr)
  canvas.height = Math.round(h * dpr)
  const g = canvas.getContext('2d')
  g.scale(dpr, dpr)
  g.clearRect(0, 0, w, h)
  const left = 64
  const right = 8
  const top = 8
  const bottom = 20
  const now = Date.now()
  const t0 = now - span * 1000
  let max = 0
  for (const s of series) for (const p of s.points) if (p.t >= t0 && p.v > max) max = p.v
  // At least 4, so the five grid lines fall on whole numbers.
  max = Math.max(4, max === 0 ? 1 : niceCeil(max))
  g.font = '11px system-ui, sans-serif'
  g.fillStyle = '#656d76'
  g.strokeStyle = '#eaeef2'
  g.lineWidth = 1
  for (let i = 0; i <= 4; i++) {
    const y = top + ((h - top - bottom) * i) / 4
    g.beginPath()
    g.moveTo(left, Math.round(y) + 0.5)
    g.lineTo(w - right, Math.round(y) + 0.5)
    g.stroke()
    g.textAlign = 'right'
    g.textBaseline = 'middle'
    g.fillText(format((max * (4 - i)) / 4), left - 8, y)
  }
  g.textAlign = 'center'
  g.textBaseline = 'top'
  for (let s = 0; s <= span; s += span / 4) g.fillText(s === span ? 'now' : `-${span - s}s`, left + ((w - left - right) * s) / span, h - bottom + 6)
  const x = (t) => left + ((w - left - right) * (t - t0)) / (span * 1000)
  const y = (v) => top + (h - top - bottom) * (1 - v / max)
  series.forEach((s, i) => {
    const pts = s.points.filter((p) => p.t >= t0 - 2000)
    if (pts.length === 0) return
    g.strokeStyle = s.color ?? COLORS[i % COLORS.length]
    g.lineWidth = 2
    g.lineJoin = 'round'
    g.beginPath()
    pts.forEach((p, k) => (k === 0 ? g.moveTo(x(p.t), y(p.v)) : g.lineTo(x(p.t), y(p.v))))
    g.stroke()
  })
}

function niceCeil(v) {
  const p = 10 ** Math.floor(Math.log10(v))
  for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * p) return m * p
  return 10 * p
}

function legend(series) {
  return `<div class="legend">${series.map((s, i) => `<span><i style="background:${s.color ?? COLORS[i % COLORS.length]}"></i>${esc(s.label)}</span>`).join('')}</div>`
}

// ----------------------------------------------------------------------------------------------------
// Overview: the cluster, its brokers and live throughput.

async function overview() {
  const c = await api('/cluster')
  const info = await api('/info')
  main.innerHTML = `
    <h1>Cluster</h1>
    <div class="stats">
      <div class="card"><div class="label">Brokers</div><div class="stat">${fmtInt(c.brokers.length)}</div></div>
      <div class="card"><div class="label">Topics</div><div class="stat">${fmtInt(c.topics)}</div></div>
      <div class="card"><div class="label">Partitions</div><div class="stat">${fmtInt(c.partitions)}</div></div>
      <div class="card"><div class="label">Under-replicated</div><div class="stat">${fmtInt(c.underReplicatedPartitions)}</div></div>
      <div class="card"><div class="label">Offline partitions</div><div class="stat">${fmtInt(c.offlinePartitions)}</div></div>
    </div>
    <div class="card tight">
      <h2>Brokers</h2>
      <table id="brokers">
        <thead><tr><th>ID</th><th>Host</th><th>Rack</th><th>Role</th><th>Health</th><th class="num">Leader partitions</th></tr></thead>
        <tbody>${c.brokers
          .map(
            (b) => `<tr><td class="mono">${b.id}</td><td class="mono">${esc(b.host)}:${b.port}</td><td>${b.rack === null ? '<span class="muted">none</span>' : esc(b.rack)}</td>
            <td>${b.controller ? '<span class="pill">controller</span>' : '<span class="pill grey">broker</span>'}</td>
            <td>${b.status === 'up' ? '<span class="pill good">up</span>' : '<span class="pill bad">unreachable</span>'}</td><td class="num">${fmtInt(b.leaderPartitions)}</td></tr>`,
          )
          .join('')}</tbody>
      </table>
    </div>
    <div class="grid">
      <div class="card"><div class="row"><h2>Records in</h2><span class="stat" id="rate-records">–</span></div><canvas class="chart" id="chart-records"></canvas><div id="legend-records"></div></div>
      <div class="card"><div class="row"><h2>Bytes in / out</h2><span class="stat" id="rate-bytes">–</span></div><canvas class="chart" id="chart-bytes"></canvas><div id="legend-bytes"></div></div>
    </div>
    <p class="muted">Throughput from ${info.throughputSource === 'broker-metrics' ? "the broker's metrics (<a href=\"/metrics\">/metrics</a>)" : 'the log end offsets (bytes are not known outside a broker)'}, sampled every second.</p>`
  throughputCharts()
}

function throughputCharts() {
  const records = { label: 'records in/s', points: [] }
  const bytesIn = { label: 'bytes in/s', points: [] }
  const bytesOut = { label: 'bytes out/s', points: [], color: COLORS[1] }
  document.getElementById('legend-records').innerHTML = legend([records])
  document.getElementById('legend-bytes').innerHTML = legend([bytesIn, bytesOut])
  let last = null
  const sample = async () => {
    let t
    try {
      t = await api('/throughput')
    } catch {
      return
    }
    if (last !== null) {
      const dt = (t.time - last.time) / 1000
      if (dt > 0) {
        const rate = (a, b) => (a === null || b === null ? null : Math.max(0, (a - b) / dt))
        const now = t.time
        records.points.push({ t: now, v: rate(t.messagesIn, last.messagesIn) })
        if (t.bytesIn !== null) bytesIn.points.push({ t: now, v: rate(t.bytesIn, last.bytesIn) })
        if (t.bytesOut !== null) bytesOut.points.push({ t: now, v: rate(t.bytesOut, last.bytesOut) })
        for (const s of [records, bytesIn, bytesOut]) if (s.points.length > 120) s.points.shift()
        const r = document.getElementById('rate-records')
        if (r === null) return
        r.textContent = fmtRate(records.points.at(-1)?.v)
        document.getElementById('rate-bytes').textContent = t.bytesIn === null ? '–' : `${fmtRate(bytesIn.points.at(-1)?.v, true)} / ${fmtRate(bytesOut.points.at(-1)?.v, true)}`
      }
    }
    last = t
    const c1 = document.getElementById('chart-records')
    if (c1 === null) return
    drawChart(c1, [records], { format: (v) => fmtInt(Math.round(v)) })
    drawChart(document.getElementById('chart-bytes'), [bytesIn, bytesOut], { format: (v) => fmtBytes(v) })
  }
  sample()
  every(1000, sample)
}

// ----------------------------------------------------------------------------------------------------
// Topics: the list, creation and deletion.

async function topics() {
  const list = await api('/topics')
  main.innerHTML = `
    <h1>Topics</h1>
    <div class="card">
      <h2>Create a topic</h2>
      <form class="inline" id="create-topic">
        <label>Name<input name="name" required pattern="[a-zA-Z0-9._\\-]+" maxlength="249" placeholder="orders" size="28"></label>
        <label>Partitions<input name="partitions" type="number" min="1" value="1" style="width:90px"></label>
        <label>Replication factor<input name="replicationFactor" type="number" min="1" value="1" style="width:90px"></label>
        <label>Configs<input name="configs" placeholder="retention.ms=86400000, cleanup.policy=compact" size="40"></label>
        <button class="primary" type="submit">Create topic</button>
      </form>
    </div>
    <div class="card tight">
      <table id="topics">
        <thead><tr><th>Name</th><th class="num">Partitions</th><th class="num">Replication</th><th class="num">Records</th><th class="num">Size</th><th>Status</th><th></th></tr></thead>
        <tbody>${
          list.length === 0
            ? '<tr><td colspan="7" class="empty">No topics yet.</td></tr>'
            : list
                .map(
                  (t) => `<tr data-topic="${esc(t.name)}"><td><a href="#/topics/${encodeURIComponent(t.name)}">${esc(t.name)}</a>${t.internal ? ' <span class="pill grey">internal</span>' : ''}</td>
          <td class="num">${fmtInt(t.partitions)}</td><td class="num">${fmtInt(t.replicationFactor)}</td><td class="num">${fmtInt(t.records)}</td><td class="num">${fmtBytes(t.sizeBytes)}</td>
          <td>${t.underReplicated > 0 ? `<span class="pill warn">${t.underReplicated} under-replicated</span>` : '<span class="pill good">healthy</span>'}</td>
          <td class="num">${t.internal ? '' : `<button class="danger" data-delete="${esc(t.name)}">Delete</button>`}</td></tr>`,
                )
                .join('')
        }</tbody>
      </table>
    </div>`
  document.getElementById('create-topic').addEventListener('submit', async (e) => {
    e.preventDefault()
    const f = new FormData(e.target)
    const configs = {}
    for (const part of String(f.get('configs') ?? '').split(',')) {
      const s = part.trim()
      if (s === '') continue
      const i = s.indexOf('=')
      if (i <= 0) return showError(new Error(`config '${s}' is not name=value`))
      configs[s.slice(0, i).trim()] = s.slice(i + 1).trim()
    }
    try {
      await api('/topics', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name: f.get('name'), partitions: Number(f.get('partitions')), replicationFactor: Number(f.get('replicationFactor')), configs }) })
      toast(`Topic ${f.get('name')} created`)
      await render()
    } catch (err) {
      showError(err)
    }
  })
  for (const b of main.querySelectorAll('[data-delete]')) {
    b.addEventListener('click', async () => {
      // Two clicks: the first asks, the second deletes.
      if (b.dataset.armed !== '1') {
        b.dataset.armed = '1'
        b.textContent = 'Really delete?'
        setTimeout(() => {
          b.dataset.armed = ''
          b.textContent = 'Delete'
        }, 4000)
        return
      }
      try {
        await api(`/topics/${encodeURIComponent(b.dataset.delete)}`, { method: 'DELETE' })
        toast(`Topic ${b.dataset.delete} deleted`)
        await render()
      } catch (err) {
        showError(err)
      }
    })
  }
}

// ----------------------------------------------------------------------------------------------------
// A topic: partitions, messages (browser and live tail), configs.

async function topic(name, tab = 'partitions') {
  const t = await api(`/topics/${encodeURIComponent(name)}`)
  const info = await api('/info')
  const tabs = ['partitions', 'messages', 'configs']
  main.innerHTML = `
    <h1>${esc(t.name)} ${t.internal ? '<span class="pill grey">internal</span>' : ''}</h1>
    <p class="muted mono">topic id ${esc(t.topicId)}</p>
    <div class="tabs">${tabs.map((x) => `<button data-tab="${x}" class="${x === tab ? 'active' : ''}">${x[0].toUpperCase() + x.slice(1)}</button>`).join('')}</div>
    <div id="tab"></div>`
  for (const b of main.querySelectorAll('[data-tab]')) b.addEventListener('click', () => (location.hash = `#/topics/${encodeURIComponent(name)}/${b.dataset.tab}`))
  const el = document.getElementById('tab')
  if (tab === 'partitions') {
    el.innerHTML = `<div class="card tight"><table id="partitions">
      <thead><tr><th class="num">Partition</th><th class="num">Leader</th><th>Replicas</th><th>In-sync replicas</th><th class="num">Start offset</th><th class="num">End offset</th><th class="num">Records</th><th class="num">Size</th></tr></thead>
      <tbody>${t.partitions
        .map(
          (p) => `<tr><td class="num">${p.partition}</td><td class="num">${p.leader < 0 ? '<span class="pill bad">offline</span>' : p.leader}</td><td class="mono">${esc(p.replicas.join(', '))}</td>
        <td class="mono">${esc(p.isr.join(', '))}${p.isr.length < p.replicas.length ? ' <span class="pill warn">under-replicated</span>' : ''}</td>
        <td class="num">${fmtInt(p.startOffset)}</td><td class="num">${fmtInt(p.endOffset)}</td><td class="num">${fmtInt(p.endOffset === null ? null : p.endOffset - p.startOffset)}</td><td class="num">${fmtBytes(p.sizeBytes)}</td></tr>`,
        )
        .join('')}</tbody></table></div>`
  } else if (tab === 'configs') {
    el.innerHTML = `<div class="card tight"><table class="configs" id="configs">
      <thead><tr><th>Name</th><th>Value</th><th>Source</th></tr></thead>
      <tbody>${t.configs
        .map((c) => `<tr><td>${esc(c.name)}</td><td class="mono">${c.sensitive ? '<span class="muted">(sensitive)</span>' : esc(c.value)}</td><td>${c.isDefault ? '<span class="pill grey">default</span>' : `<span class="pill">${esc(c.source.toLowerCase().replace(/_/g, ' '))}</span>`}</td></tr>`)
        .join('')}</tbody></table></div>`
  } else messages(el, t, info)
}

const recordRow = (r, fresh) => `<tr class="${fresh ? 'flash' : ''}"><td class="num">${r.partition}</td><td class="num">${fmtInt(r.offset)}</td><td class="mono">${esc(fmtTime(r.timestamp))}</td>
  <td class="mono value">${fieldHtml(r.key, r.keyFormat)}</td><td class="mono value">${fieldHtml(r.value, r.valueFormat)}</td>
  <td class="mono">${(r.headers ?? []).map((h) => `${esc(h.key)}=${esc(h.value)}`).join('<br>')}</td></tr>`

function fieldHtml(v, format) {
  if (v === null || v === undefined) return '<span class="muted">null</span>'
  const text = typeof v === 'string' ? v : JSON.stringify(v, null, 1)
  const tag = format && format !== 'string' ? ` <span class="pill grey">${esc(format)}</span>` : ''
  return esc(text.length > 2000 ? `${text.slice(0, 2000)}…` : text) + tag
}

const RECORD_HEAD = '<thead><tr><th class="num">Partition</th><th class="num">Offset</th><th>Timestamp (UTC)</th><th>Key</th><th>Value</th><th>Headers</th></tr></thead>'

function messages(el, t, info) {
  el.innerHTML = `
    <div class="card">
      <form class="inline" id="browse">
        <label>Partition<select name="partition">${t.partitions.map((p) => `<option value="${p.partition}">${p.partition}</option>`).join('')}</select></label>
        <label>From<select name="from"><option value="offset">offset</option><option value="timestamp">timestamp</option></select></label>
        <label>Offset or time<input name="at" placeholder="0 or 2024-01-01T00:00:00Z" size="26"></label>
        <label>Limit<input name="limit" type="number" min="1" max="500" value="50" style="width:80px"></label>
        <button type="submit" class="primary">Show records</button>
      </form>
    </div>
    <div class="card tight"><div class="row" style="padding:12px 16px 0"><h2 style="margin:0">Records</h2><span class="muted" id="browse-status"></span></div>
      <table id="records">${RECORD_HEAD}<tbody><tr><td colspan="6" class="empty">Choose a partition and a start, then “Show records”.</td></tr></tbody></table></div>
    <div class="card tight"><div class="row" style="padding:12px 16px 0"><h2 style="margin:0">Live tail</h2>
      <span class="tail-status"><span class="dot" id="tail-dot"></span><span id="tail-state">${info.websocket ? 'connecting…' : 'WebSocket streaming is off (websocket.enable)'}</span>
      <button id="tail-toggle" ${info.websocket ? '' : 'disabled'}>Pause</button></span></div>
      <table id="tail">${RECORD_HEAD}<tbody><tr class="waiting"><td colspan="6" class="empty">New records of every partition appear here as they are written.</td></tr></tbody></table></div>`
  document.getElementById('browse').addEventListener('submit', async (e) => {
    e.preventDefault()
    const f = new FormData(e.target)
    const q = new URLSearchParams({ partition: f.get('partition'), limit: f.get('limit') || '50' })
    const at = String(f.get('at') ?? '').trim()
    if (at !== '') {
      if (f.get('from') === 'timestamp') {
        const ms = /^\d+$/.test(at) ? Number(at) : Date.parse(at)
        if (Number.isNaN(ms)) return showError(new Error(`'${at}' is not a time`))
        q.set('timestamp', String(ms))
      } else q.set('offset', at)
    }
    try {
      const r = await api(`/topics/${encodeURIComponent(t.name)}/records?${q}`)
      document.getElementById('browse-status').textContent = `offsets ${fmtInt(r.startOffset)}–${fmtInt(r.endOffset)} in partition ${r.partition}; ${r.records.length} shown`
      document.querySelector('#records tbody').innerHTML = r.records.length === 0 ? '<tr><td colspan="6" class="empty">No records there.</td></tr>' : r.records.map((x) => recordRow(x, false)).join('')
    } catch (err) {
      showError(err)
    }
  })
  if (info.websocket) liveTail(t.name)
}

function liveTail(name) {
  const body = document.querySelector('#tail tbody')
  const dot = document.getElementById('tail-dot')
  const state = document.getElementById('tail-state')
  const toggle = document.getElementById('tail-toggle')
  let ws = null
  let paused = false
  let closedByPage = false
  let count = 0
  const open = () => {
    const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws/topics/${encodeURIComponent(name)}?offset=latest&format=json&encoding=auto`
    ws = new WebSocket(url)
    ws.onmessage = (e) => {
      const m = JSON.parse(e.data)
      if (m.type === 'subscribed') {
        dot.classList.add('live')
        state.textContent = 'live'
        body.dataset.ready = '1'
      } else if (m.type === 'records' && !paused) {
        body.querySelector('.waiting')?.remove()
        body.insertAdjacentHTML('afterbegin', m.records.slice(-200).reverse().map((r) => recordRow(r, true)).join(''))
        while (body.rows.length > 200) body.deleteRow(body.rows.length - 1)
        count += m.records.length
        state.textContent = `live · ${fmtInt(count)} records`
      } else if (m.type === 'error') showError(new Error(m.message))
    }
    ws.onclose = () => {
      dot.classList.remove('live')
      if (closedByPage) return
      state.textContent = 'disconnected; reconnecting…'
      setTimeout(() => !closedByPage && open(), 2000)
    }
  }
  open()
  toggle.addEventListener('click', () => {
    paused = !paused
    toggle.textContent = paused ? 'Resume' : 'Pause'
    state.textContent = paused ? 'paused' : 'live'
  })
  onLeave(() => {
    closedByPage = true
    ws?.close()
  })
}

// ----------------------------------------------------------------------------------------------------
// Consumer groups: the list, and one group's members and lag (with a chart of lag over time).

async function groups() {
  const list = await api('/groups')
  main.innerHTML = `
    <h1>Consumer groups</h1>
    <div class="card tight"><table id="groups">
      <thead><tr><th>Group</th><th>State</th><th class="num">Members</th><th>Topics</th><th class="num">Lag</th><th class="num" title="Share groups: records acquired, available again or acknowledged above the start offset, in the share-partitions this broker leads">In flight</th></tr></thead>
      <tbody>${
        list.length === 0
          ? '<tr><td colspan="6" class="empty">No consumer groups yet.</td></tr>'
          : list
              .map(
                (g) => `<tr><td><a href="#/groups/${encodeURIComponent(g.groupId)}">${esc(g.groupId)}</a>${g.protocolType === 'share' ? ' <span class="pill grey">share</span>' : ''}</td><td>${stateHtml(g.state)}</td><td class="num">${fmtInt(g.members)}</td>
          <td>${g.topics.map((t) => `<a href="#/topics/${encodeURIComponent(t)}">${esc(t)}</a>`).join(', ')}</td><td class="num">${fmtInt(g.lag)}</td><td class="num">${fmtInt(g.inFlight)}</td></tr>`,
              )
              .join('')
      }</tbody></table></div>`
}

function stateHtml(s) {
  const cls = s === 'Stable' ? 'good' : s === 'Empty' ? 'grey' : s === 'Dead' ? 'bad' : 'warn'
  return `<span class="pill ${cls}">${esc(s)}</span>`
}

async function group(id) {
  const history = new Map()
  const draw = (g) => {
    const now = Date.now()
    for (const p of g.partitions) {
      const key = `${p.topic}-${p.partition}`
      if (!history.has(key)) history.set(key, { label: key, points: [] })
      const s = history.get(key)
      s.points.push({ t: now, v: p.lag ?? 0 })
      if (s.points.length > 400) s.points.shift()
    }
    const total = history.get('total') ?? { label: 'total', points: [], color: '#24292f' }
    history.set('total', total)
    total.points.push({ t: now, v: g.lag })
    const series = [...history.values()].slice(0, 7)
    const canvas = document.getElementById('lag-chart')
    if (canvas === null) return
    drawChart(canvas, series, { span: 300, format: (v) => fmtInt(Math.round(v)) })
    document.getElementById('lag-legend').innerHTML = legend(series)
  }
  const g = await api(`/groups/${encodeURIComponent(id)}`)
  const share = g.protocolType === 'share'
  main.innerHTML = `
    <h1>${esc(id)} ${stateHtml(g.state)}</h1>
    <div class="stats">
      <div class="card"><div class="label">Members</div><div class="stat">${fmtInt(g.members.length)}</div></div>
      <div class="card"><div class="label">Total lag</div><div class="stat" id="total-lag">${fmtInt(g.lag)}</div></div>
      ${share ? `<div class="card"><div class="label" title="Records acquired, available again or acknowledged above the start offset, in the share-partitions this broker leads">In flight</div><div class="stat" id="total-in-flight">${fmtInt(g.inFlight)}</div></div>` : ''}
      <div class="card"><div class="label">Protocol</div><div class="stat" style="font-size:18px">${esc(g.protocolType || '–')} ${g.protocol ? `<small>${esc(g.protocol)}</small>` : ''}</div></div>
    </div>
    <div class="card"><h2>Lag over time</h2><canvas class="chart" id="lag-chart"></canvas><div id="lag-legend"></div></div>
    <div class="card tight"><h2>Lag per partition</h2><table id="lag">
      <thead><tr>${
        share
          ? '<th>Topic</th><th class="num">Partition</th><th class="num">Start offset</th><th class="num">Lag</th><th class="num" title="Records acquired, available again or acknowledged above the start offset (–: not held by this broker: led by another, or idle)">In flight</th><th>Consumers</th>'
          : '<th>Topic</th><th class="num">Partition</th><th class="num">Committed offset</th><th class="num">End offset</th><th class="num">Lag</th><th>Consumer</th>'
      }</tr></thead>
      <tbody></tbody></table></div>
    <div class="card tight"><h2>Members</h2><table id="members">
      <thead><tr><th>Client id</th><th>Host</th><th>Member id</th><th>Assigned partitions</th></tr></thead>
      <tbody>${
        g.members.length === 0
          ? '<tr><td colspan="4" class="empty">No active members.</td></tr>'
          : g.members.map((m) => `<tr><td>${esc(m.clientId)}</td><td class="mono">${esc(m.host)}</td><td class="mono">${esc(m.memberId)}</td><td class="mono">${esc(m.assignment.map((a) => `${a.topic}-${a.partition}`).join(', '))}</td></tr>`).join('')
      }</tbody></table></div>`
  const fill = (g) => {
    const body = document.querySelector('#lag tbody')
    if (body === null) return
    body.innerHTML =
      g.partitions.length === 0
        ? '<tr><td colspan="6" class="empty">No committed offsets.</td></tr>'
        : g.partitions
            .map((p) =>
              share
                ? `<tr><td><a href="#/topics/${encodeURIComponent(p.topic)}">${esc(p.topic)}</a></td><td class="num">${p.partition}</td><td class="num">${fmtInt(p.startOffset)}</td><td class="num">${fmtInt(p.lag)}</td><td class="num">${fmtInt(p.inFlight)}</td><td>${esc(p.owners.length === 0 ? '–' : p.owners.join(', '))}</td></tr>`
                : `<tr><td><a href="#/topics/${encodeURIComponent(p.topic)}">${esc(p.topic)}</a></td><td class="num">${p.partition}</td><td class="num">${fmtInt(p.committed)}</td><td class="num">${p.endOffset === undefined ? '–' : fmtInt(p.endOffset)}</td><td class="num">${fmtInt(p.lag)}</td><td>${esc(p.owner ?? '–')}</td></tr>`,
            )
            .join('')
    document.getElementById('total-lag').textContent = fmtInt(g.lag)
    if (share) document.getElementById('total-in-flight').textContent = fmtInt(g.inFlight)
    draw(g)
  }
  fill(g)
  every(2000, async () => {
    try {
      fill(await api(`/groups/${encodeURIComponent(id)}`))
    } catch {
      // The group went away or the cluster is unreachable: keep what is shown.
    }
  })
}

// ----------------------------------------------------------------------------------------------------
// Routing: #/, #/topics, #/topics/NAME[/TAB], #/groups, #/groups/ID

async function render() {
  for (const fn of cleanups.splice(0)) fn()
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent)
  const section = parts[0] || 'overview'
  for (const a of document.querySelectorAll('[data-nav]')) a.classList.toggle('active', a.dataset.nav === section)
  try {
    if (section === 'topics' && parts[1]) await topic(parts[1], parts[2] || 'partitions')
    else if (section === 'topics') await topics()
    else if (section === 'groups' && parts[1]) await group(parts[1])
    else if (section === 'groups') await groups()
    else await overview()
    document.title = `Skein · ${parts[1] || section}`
  } catch (err) {
    main.innerHTML = ''
    showError(err)
  }
  main.dataset.page = `${section}${parts[1] ? `/${parts[1]}` : ''}`
}

window.addEventListener('hashchange', render)
api('/cluster')
  .then((c) => (document.getElementById('cluster-id').textContent = `cluster ${c.clusterId ?? ''}`))
  .catch(() => {})
render()
