#!/usr/bin/env node
'use strict';
// run.js — the active/standby failover loop of issue 17 (item 5); see README.md.
//
//   SMQD_BIN=build/smqd node tests/failover/run.js [--cycles N] [--pg-failover 0|1] [--nodes 2|3]
//        [--seed S] [--ttl S] [--keep] [--max-seconds S]
//
// One PostgreSQL (tests/pg/pg-server.sh; with --pg-failover 1 also a synchronous streaming
// standby), N smqd nodes a, b (c) on fixed loopback ports, each reaching PostgreSQL through its
// own freezable TCP proxy (tcpproxy.js), HAProxy in front (`option httpchk GET /ready`; without
// the haproxy binary an in-test router that follows /ready, said so in the output), and the
// crash loop's SDK traffic (tests/crashloop/traffic.js) with its ledger through the front.
// Cycle actions, rotated: kill9 | sigstop (past the lease, then SIGCONT) | cut (proxy frozen).
// After every cycle: the ledger against the rows in PostgreSQL, at most one /ready 200 in every
// 100 ms sample, an old active's receipt handle works on the new one, every topic and
// subscription acknowledged before a fault (one per cycle) is served as made by the new active
// and the publish acknowledged to it reaches its subscribed queue and, signed with the one key
// every node keeps in PostgreSQL, the harness's HTTP endpoint (a push a takeover repeats is
// counted, never a lost one), takeover <= 15 s, and the
// victim restarted with the same node_id and ports is standby (/ready 503) within 30 s.
// The PostgreSQL failover (kill -9 of the primary, pg_ctl promote of the standby) runs last.

const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');
const net = require('net');
const http = require('http');
const { spawn, execFileSync } = require('child_process');
// The nodes here are PostgreSQL nodes by their own config; the harness's one-node PG switch
// would wait for /ready 200 on standbys.
delete process.env.SMQD_TEST_PG_DSN;
const harness = require('../integration/node/harness.js');
const traffic = require('../crashloop/traffic.js');
const { Ledger } = require('../crashloop/ledger.js');
const { rngFrom } = require('../crashloop/run.js');
const pgcheck = require('./pgcheck.js');
const { signatureOk, headerMap } = require('../../docs/examples/push-verifier.js');
const tcpproxy = require('./tcpproxy.js');

const PG_SERVER = path.join(__dirname, '..', 'pg', 'pg-server.sh');
const PG_BIN = process.env.PG_BIN || '/usr/lib/postgresql/15/bin';
const ACTIONS = ['kill9', 'sigstop', 'cut'];
const TAKEOVER_MAX_MS = 15000;
const STANDBY_MAX_MS = 30000;
const OUTAGE = new Set(['MNSServiceUnavailableError', 'MNSInternalErrorError', 'MNSInternalServerErrorError']);
const HANDLE_Q = 'fo-handle';
const PROBE_Q = 'fo-probe';     // takeover probes: a write, so an old active still serving from
                                // memory (PostgreSQL failover) does not count as the new one
const sleep = traffic.sleep;

function parseArgs(argv) {
  const o = { cycles: 20, pgFailover: 1, nodes: 2, seed: null, ttl: 5, keep: false, maxSeconds: 0,
              producers: 3, consumers: 2, longPollers: 2 };
  const names = { '--cycles': 'cycles', '--pg-failover': 'pgFailover', '--nodes': 'nodes',
                  '--seed': 'seed', '--ttl': 'ttl', '--max-seconds': 'maxSeconds' };
  for (let i = 2; i < argv.length; i++) {
    if (argv[i] === '--keep') o.keep = true;
    else if (names[argv[i]] && i + 1 < argv.length) o[names[argv[i]]] = argv[++i];
    else throw new Error(`unknown or incomplete argument ${argv[i]} (see the header of run.js)`);
  }
  for (const k of ['cycles', 'pgFailover', 'nodes', 'ttl', 'maxSeconds']) o[k] = Number(o[k]);
  if (![2, 3].includes(o.nodes)) throw new Error('--nodes: 2 or 3');
  o.seed = o.seed === null ? (Date.now() ^ process.pid) >>> 0 : Number(o.seed) >>> 0;
  if (!o.maxSeconds) o.maxSeconds = 120 + (o.cycles + o.pgFailover) * 60;
  return o;
}

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

function getStatus(url, ms = 300) {
  return new Promise((resolve) => {
    const req = http.get(url, (res) => { res.resume(); resolve(res.statusCode); });
    req.on('error', () => resolve(0));
    req.setTimeout(ms, () => { req.destroy(); resolve(0); });
  });
}

// ---- PostgreSQL ----

function pgStart(dir, max) {
  return Number(execFileSync('bash', [PG_SERVER, 'start', dir, String(max)], { encoding: 'utf8' }).trim().split('\n').pop());
}

async function startPg(st) {
  // Each PostgreSQL directory is its own mkdtemp: pg-server.sh hands DIR to the postgres
  // user when run as root, and postgres could not enter a root-only parent.
  const pgDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'smqd-failover-pg-'));
  st.pg = [{ dir: pgDir() }];
  st.pg[0].port = pgStart(st.pg[0].dir, st.opts.maxSeconds + 60);
  const base = fs.readFileSync(path.join(st.pg[0].dir, 'dsn'), 'utf8').trim();
  st.baseDsn = base;
  if (st.opts.pgFailover) {
    const sb = { dir: pgDir() };
    sb.port = Number(execFileSync('bash', [PG_SERVER, 'standby', st.pg[0].dir, sb.dir, 'smqd_sb',
      String(st.opts.maxSeconds + 60)], { encoding: 'utf8' }).trim().split('\n').pop());
    st.pg.push(sb);
    // Synchronous: a COMMIT the primary acknowledged is on the standby, so promoting it
    // after a kill -9 of the primary loses no acknowledged write.
    pgcheck.psql(base, "ALTER SYSTEM SET synchronous_standby_names = 'smqd_sb'");
    pgcheck.psql(base, 'SELECT pg_reload_conf()');
    await waitFor(async () => pgcheck.psql(base,
      "SELECT 1 FROM pg_stat_replication WHERE application_name = 'smqd_sb' AND sync_state = 'sync'").length > 0,
    20000, 'the standby did not become synchronous within 20 s');
  }
  st.checkDsn = `host=${st.pg.map(() => '127.0.0.1').join(',')} port=${st.pg.map((p) => p.port).join(',')} ` +
    'dbname=smqd user=smqd target_session_attrs=read-write connect_timeout=5';
}

function pgOwner(args) {
  const cmd = path.join(PG_BIN, args[0]);
  if (process.getuid() === 0) execFileSync('runuser', ['-u', 'postgres', '--', cmd, ...args.slice(1)]);
  else execFileSync(cmd, args.slice(1));
}

// ---- smqd nodes ----

function writeNodeConfig(st, n) {
  const hosts = n.proxies.map(() => '127.0.0.1').join(',');
  const ports = n.proxies.map((p) => p.port).join(',');
  fs.writeFileSync(path.join(n.dir, 'smqd.conf'), [
    '[server]', `listen = 127.0.0.1:${n.port}`,
    '[storage]', 'backend = postgresql',
    `dsn = host=${hosts} port=${ports} dbname=smqd user=smqd target_session_attrs=read-write connect_timeout=3`,
    '[cluster]', `node_id = ${n.id}`, `lease_ttl_s = ${st.opts.ttl}`,
    '[auth]', `access_key_id = ${harness.AK}`, `access_key_secret = ${harness.SK}`,
    '[log]', 'level = info',
    '[admin]', `listen = 127.0.0.1:${n.adminPort}`, ''
  ].join('\n'));
}

async function makeNodes(st) {
  st.nodes = [];
  for (const id of ['a', 'b', 'c'].slice(0, st.opts.nodes)) {
    const n = { id, dir: path.join(st.dir, `node-${id}`), port: await freePort(), adminPort: await freePort() };
    fs.mkdirSync(n.dir);
    n.proxies = [];
    for (const pg of st.pg) n.proxies.push(await tcpproxy.start(pg.port));
    n.ready = `http://127.0.0.1:${n.adminPort}/ready`;
    n.endpoint = `http://127.0.0.1:${n.port}`;
    writeNodeConfig(st, n);
    st.nodes.push(n);
  }
}

async function startNode(n) {
  n.server = await harness.startServer(n.dir);
}

// ---- the front: HAProxy, or a router that follows /ready ----

function haproxyBin() {
  for (const d of (process.env.PATH || '').split(':').concat(['/usr/sbin'])) {
    if (fs.existsSync(path.join(d, 'haproxy'))) return path.join(d, 'haproxy');
  }
  return '';
}

async function startFront(st) {
  st.frontPort = await freePort();
  const bin = haproxyBin();
  if (bin) {
    const cfg = path.join(st.dir, 'haproxy.cfg');
    fs.writeFileSync(cfg, ['global', '  maxconn 512', 'defaults', '  mode http', '  timeout connect 1s',
      '  timeout client 30s', '  timeout server 30s', '  retries 0',
      'frontend fe', `  bind 127.0.0.1:${st.frontPort}`, '  default_backend smqd',
      'backend smqd', '  option httpchk GET /ready',
      ...st.nodes.map((n) => `  server ${n.id} 127.0.0.1:${n.port} check port ${n.adminPort} inter 300ms fall 1 rise 1`),
      ''].join('\n'));
    st.haproxy = spawn(bin, ['-f', cfg, '-db'], { stdio: ['ignore', 'ignore', 'pipe'] });
    st.haproxy.stderr.on('data', () => {});
    st.front = 'haproxy';
  } else {
    st.router = http.createServer((req, res) => {
      const n = st.nodes.find((x) => x.lastReady === 200);
      if (!n) { res.writeHead(503); res.end(); return; }
      const up = http.request({ host: '127.0.0.1', port: n.port, method: req.method, path: req.url, headers: req.headers },
        (r) => { res.writeHead(r.statusCode, r.headers); r.pipe(res); });
      up.on('error', () => res.destroy());
      req.pipe(up);
    });
    await new Promise((r) => st.router.listen(st.frontPort, '127.0.0.1', r));
    st.front = 'router (haproxy not installed)';
  }
  st.frontEndpoint = `http://127.0.0.1:${st.frontPort}`;
}

// ---- the /ready sampler: at most one active at any instant ----

function startSampler(st) {
  st.samples = 0;
  st.sampler = setInterval(async () => {
    if (st.sampling) return;
    st.sampling = true;
    const codes = await Promise.all(st.nodes.map((n) => getStatus(n.ready, 90)));
    codes.forEach((c, i) => { st.nodes[i].lastReady = c; });
    st.samples++;
    const active = st.nodes.filter((n, i) => codes[i] === 200).map((n) => n.id);
    if (active.length > 1) st.ledger.violation(st.cycle, 'two-active', `/ready 200 on ${active.join(', ')} at once`);
    st.sampling = false;
  }, 100);
}

async function waitFor(fn, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(what);
    await sleep(100);
  }
}

function mnsOf(endpoint) {
  return harness.client({ endpoint });
}

async function activeNode(st, except, ms) {
  return waitFor(async () => {
    for (const n of st.nodes) {
      if (n === except || !n.server) continue;
      if (await getStatus(n.ready) === 200) return n;
    }
    return null;
  }, ms, 'no node became active');
}

// First successful MNS write (SendMessage) on a node other than the victim, timed from t0.
async function takeover(st, victim, t0) {
  return waitFor(async () => {
    for (const n of st.nodes) {
      if (n === victim || !n.server) continue;
      try {
        await mnsOf(n.endpoint).sendMessage(PROBE_Q, { MessageBody: `probe-${st.cycle}` });
        return { node: n, ms: Math.round(traffic.now() - t0) };
      } catch (e) { /* not yet */ }
    }
    return null;
  }, TAKEOVER_MAX_MS + 15000, 'no node answered MNS within 30 s of the fault');
}

// ---- the faults ----

async function inject(st, action, victim) {
  const pid = victim.server.pid;
  if (action === 'kill9') {
    await victim.server.kill9();
    victim.server = null;
  } else if (action === 'sigstop') {
    process.kill(pid, 'SIGSTOP');
    victim.stoppedUntil = Date.now() + (st.opts.ttl + 2) * 1000;
  } else if (action === 'cut') {
    for (const p of victim.proxies) p.freeze();
  } else if (action === 'pg') {
    const primaryPid = fs.readFileSync(path.join(st.pg[0].dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0];
    process.kill(Number(primaryPid), 'SIGKILL');
    pgOwner(['pg_ctl', 'promote', '-w', '-D', path.join(st.pg[1].dir, 'data')]);
  }
}

// After the takeover: undo the fault, then the victim restarts with the same node_id and
// ports and must come back as a standby.
async function heal(st, action, victim) {
  if (action === 'sigstop') {
    await sleep(Math.max(0, victim.stoppedUntil - Date.now()));
    process.kill(victim.server.pid, 'SIGCONT');
    // Woken past its lease, it must not claim to be active (the sampler checks), and it
    // must drop to standby by itself.
    await waitFor(async () => await getStatus(victim.ready) === 503, STANDBY_MAX_MS,
      `${victim.id} did not fall to standby after SIGCONT`).catch((e) => st.ledger.violation(st.cycle, 'no-demote', e.message));
  }
  if (action === 'cut') {
    await sleep((st.opts.ttl + 2) * 1000);
    for (const p of victim.proxies) p.thaw();
  }
  if (action === 'pg') return;
  if (victim.server) {
    victim.oldLog = victim.server.log();
    await victim.server.stop();
  }
  await startNode(victim);
  const t = traffic.now();
  await waitFor(async () => await getStatus(victim.ready) === 503, STANDBY_MAX_MS,
    `${victim.id} restarted was not standby (/ready 503) within 30 s`)
    .catch((e) => st.ledger.violation(st.cycle, 'restart-standby', e.message));
  return Math.round(traffic.now() - t);
}

// A receipt handle from the old active, used on the new one: even cycles change its
// visibility then delete with the new handle, odd ones delete with the old handle.
async function takeHandle(st, active) {
  const mns = mnsOf(active.endpoint);
  const body = `fo-handle-${st.cycle}`;
  await mns.sendMessage(HANDLE_Q, { MessageBody: body });
  const r = await mns.receiveMessage(HANDLE_Q, 1);
  return { body, handle: r.body.ReceiptHandle, got: r.body.MessageBody };
}

async function useHandle(st, h, active) {
  const mns = mnsOf(active.endpoint);
  try {
    if (h.got !== h.body) throw new Error(`received ${h.got}, sent ${h.body}`);
    let handle = h.handle;
    if (st.cycle % 2 === 0) {
      const r = await mns.changeMessageVisibility(HANDLE_Q, handle, 30);
      handle = r.body.ReceiptHandle;
    }
    await mns.deleteMessage(HANDLE_Q, handle);
  } catch (e) {
    st.ledger.violation(st.cycle, 'handle', `old active's handle on ${active.id}: ${e.name}: ${e.message}`);
  }
}

function checkRows(st) {
  const r = pgcheck.inspect(st.checkDsn);
  for (const t of r.torn) st.ledger.violation(st.cycle, 'torn-row', t);
  // The topic checks' queues (fo-q-N) are checked by checkTopics, not by the ledger.
  const rows = r.rows.filter((x) => x.queue !== HANDLE_Q && x.queue !== PROBE_Q && !x.queue.startsWith('fo-q-'));
  return { n: st.ledger.checkDisk(st.cycle, rows), lease: r.lease };
}

// ---- topics: an acknowledged CreateTopic, Subscribe and PublishMessage survive every takeover ----

const subBody = (queue) => '<?xml version="1.0" encoding="UTF-8"?><Subscription xmlns="http://mns.aliyuncs.com/doc/v1/">'
  + `<Endpoint>acs:mns:cn-hangzhou:1:queues/${queue}</Endpoint><NotifyContentFormat>SIMPLIFIED</NotifyContentFormat></Subscription>`;

// The HTTP endpoint of every cycle's topic: records each push's body per path (SIMPLIFIED: the
// published body) and whether its signature verified with the certificate the first active
// node served — the same on every node, since they share the key in PostgreSQL (§13.11).
async function startPushSink(st, active) {
  const res = await fetch(`${active.endpoint}/smqd/signing-cert.pem`);
  const cert = crypto.createPublicKey(await res.text());
  st.pushes = new Map();          // path -> [{ body, verified }]
  st.sink = http.createServer((req, rsp) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const h = headerMap(req.rawHeaders);
      const verified = h !== null && signatureOk(req.method, req.url, h, cert);
      if (!st.pushes.has(req.url)) st.pushes.set(req.url, []);
      st.pushes.get(req.url).push({ body: Buffer.concat(chunks).toString('utf8'), verified });
      rsp.writeHead(verified ? 204 : 403).end();
    });
  });
  await new Promise((r) => st.sink.listen(0, '127.0.0.1', r));
  st.sinkUrl = `http://127.0.0.1:${st.sink.address().port}`;
}

const httpSubBody = (url) => '<?xml version="1.0" encoding="UTF-8"?><Subscription xmlns="http://mns.aliyuncs.com/doc/v1/">'
  + `<Endpoint>${url}</Endpoint><NotifyStrategy>EXPONENTIAL_DECAY_RETRY</NotifyStrategy>`
  + '<NotifyContentFormat>SIMPLIFIED</NotifyContentFormat></Subscription>';

// The acknowledged publish of t pushed (signed) to the endpoint within ms; its duplicates counted.
async function checkPushed(st, t, ms) {
  const end = Date.now() + ms;
  const got = () => (st.pushes.get(`/fo/${t.name}`) || []).filter((p) => p.body === t.body);
  while (Date.now() < end && !got().some((p) => p.verified)) await sleep(100);
  const all = got();
  if (!all.some((p) => p.verified)) {
    st.ledger.violation(st.cycle, 'push-lost', `${t.name}: ${all.length} pushes, none verified`);
  } else if (all.length > 1) {
    st.ledger.anomaly(st.cycle, 'push-repeated', `${t.name}: pushed ${all.length} times`);
  }
  t.pushed = true;
}

// One topic per cycle with one subscription into a queue of its own, made on the active node
// just before the fault, and one publish to it; only what was answered 201 is recorded (in
// st.topics), and the publish's body must then reach the queue, before or after the takeover.
async function makeTopic(st, active) {
  const name = `fo-topic-${st.cycle}`;
  const queue = `fo-q-${st.cycle}`;
  const mns = mnsOf(active.endpoint);
  try {
    await mns.createQueue(queue, {});
    await mns.createTopic(name, { LoggingEnabled: true });
    await mns.put(`/topics/${name}/subscriptions/s`, 'Subscription', subBody(queue));
    await mns.put(`/topics/${name}/subscriptions/h`, 'Subscription', httpSubBody(`${st.sinkUrl}/fo/${name}`));
    const t = { name, queue, body: null };
    st.topics.push(t);
    await mns.publishMessage(name, { MessageBody: `published in cycle ${st.cycle}` });
    t.body = `published in cycle ${st.cycle}`;
  } catch (e) {
    st.ledger.anomaly(st.cycle, 'topic-create', `${name}: ${e.name}: ${e.message}`);
  }
}

// The acknowledged publish of t, received (and deleted) from its queue within ms.
async function receivePublished(mns, t, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    try {
      const r = await mns.receiveMessage(t.queue, 1);
      await mns.deleteMessage(t.queue, r.body.ReceiptHandle);
      return r.body.MessageBody;
    } catch (e) {
      if (e.name !== 'MNSMessageNotExistError') throw e;
    }
  }
  return null;
}

async function checkTopics(st, active) {
  const mns = mnsOf(active.endpoint);
  for (const t of st.topics) {
    try {
      const a = await mns.getTopicAttributes(t.name);
      const s = await mns.get(`/topics/${t.name}/subscriptions/s`, 'Subscription');
      if (a.body.LoggingEnabled !== 'True' || s.body.Endpoint !== `acs:mns:cn-hangzhou:1:queues/${t.queue}`) {
        st.ledger.violation(st.cycle, 'topic-changed', `${t.name}: ${JSON.stringify([a.body, s.body])}`);
      }
      if (t.body !== null && !t.delivered) {
        const got = await receivePublished(mns, t, 15000);
        if (got !== t.body) st.ledger.violation(st.cycle, 'publish-lost', `${t.name}: got ${JSON.stringify(got)}`);
        t.delivered = true;
      }
      if (t.body !== null && !t.pushed) await checkPushed(st, t, 15000);
    } catch (e) {
      st.ledger.violation(st.cycle, 'topic-lost', `${t.name} on ${active.id}: ${e.name}: ${e.message}`);
    }
  }
}

// ---- one cycle ----

async function runCycle(st, action) {
  const { ledger, rng } = st;
  const victim = await activeNode(st, null, 30000);
  const h = await takeHandle(st, victim);
  await makeTopic(st, victim);
  const ctx = traffic.newContext(mnsOf(st.frontEndpoint), st.cycle, rng, ledger, OUTAGE);
  const before = { ...ledger.counts };
  const nV = ledger.violations.length;
  const loops = traffic.start(ctx, st.opts);
  await sleep(1000 + Math.round(rng() * 2000));
  ctx.killed = true;
  const t0 = traffic.now();
  await inject(st, action, victim);
  const tk = await takeover(st, action === 'pg' ? null : victim, t0)
    .catch((e) => { ledger.violation(st.cycle, 'takeover', e.message); return null; });
  if (tk && tk.ms > TAKEOVER_MAX_MS) ledger.violation(st.cycle, 'takeover-slow', `${tk.ms} ms > ${TAKEOVER_MAX_MS}`);
  if (tk) await useHandle(st, h, tk.node);
  if (tk) await checkTopics(st, tk.node);
  const standbyMs = await heal(st, action, victim);
  await sleep(1000);      // traffic through the new active
  ctx.dead = true;
  await Promise.race([Promise.all(loops), sleep(40000)]);
  const disk = checkRows(st);
  return { cycle: st.cycle, action, victim: victim.id, newActive: tk ? tk.node.id : '-',
           takeoverMs: tk ? tk.ms : null, standbyMs, rows: disk.n, lease: disk.lease,
           sends: ledger.counts.sendsAcked - before.sendsAcked,
           deletes: ledger.counts.deletesAcked - before.deletesAcked,
           violations: ledger.violations.length - nV };
}

async function finish(st) {
  const active = await activeNode(st, null, 30000);
  const ctx = traffic.newContext(mnsOf(active.endpoint), st.cycle, st.rng, st.ledger, OUTAGE);
  ctx.inDrain = true;
  await traffic.drain(ctx, 60000).catch((e) => st.ledger.violation(st.cycle, 'drain', e.message));
  for (const n of st.nodes) {
    if (!n.server) continue;
    const e = await n.server.stop();
    if (e.code !== 0 || e.signal !== null) st.ledger.violation(st.cycle, 'stop', `${n.id}: ${JSON.stringify(e)}`);
  }
  const disk = checkRows(st);
  if (disk.n !== 0) st.ledger.violation(st.cycle, 'drain', `${disk.n} messages left after the drain`);
  if (!st.topics.some((t) => t.delivered)) {
    st.ledger.violation(st.cycle, 'topics', 'no PublishMessage was acknowledged and checked');
  }
  if (!st.topics.some((t) => t.pushed)) {
    st.ledger.violation(st.cycle, 'topics', 'no acknowledged PublishMessage was checked at the HTTP endpoint');
  }
  st.ledger.checkFinal(st.cycle);
}

function cleanup(st) {
  clearInterval(st.sampler);
  for (const n of st.nodes || []) {
    if (n.server) { try { process.kill(n.server.pid, 'SIGCONT'); n.server.kill9(); } catch (e) { /* gone */ } }
    for (const p of n.proxies || []) p.close();
  }
  if (st.haproxy) { try { process.kill(st.haproxy.pid, 'SIGKILL'); } catch (e) { /* gone */ } }
  if (st.router) st.router.close();
  if (st.sink) { st.sink.closeAllConnections(); st.sink.close(); }
  for (const pg of st.pg || []) {
    try { execFileSync('bash', [PG_SERVER, 'stop', pg.dir], { stdio: 'ignore' }); } catch (e) { /* gone */ }
    if (!st.opts.keep) fs.rmSync(pg.dir, { recursive: true, force: true });
  }
}

function saveLogs(st) {
  for (const n of st.nodes || []) {
    fs.writeFileSync(path.join(st.dir, `node-${n.id}.log`), (n.oldLog || '') + (n.server ? n.server.log() : ''));
  }
}

function report(st, results) {
  const tks = results.map((r) => r.takeoverMs).filter((x) => x !== null);
  console.log(`front: ${st.front}; /ready samples: ${st.samples}; takeover ms: ${tks.join(' ')}` +
    (tks.length ? ` (max ${Math.max(...tks)})` : ''));
  const pushes = [...(st.pushes || new Map()).values()].flat();
  console.log(`HTTP pushes received: ${pushes.length}, verified ${pushes.filter((p) => p.verified).length}; ` +
    `topics checked at the endpoint: ${st.topics.filter((t) => t.pushed).length}`);
  for (const v of st.ledger.violations.slice(0, 20)) console.log(`VIOLATION cycle ${v.cycle} ${v.kind}: ${v.detail}`);
  for (const a of st.ledger.anomalies.slice(0, 10)) console.log(`anomaly cycle ${a.cycle} ${a.kind}: ${a.detail}`);
  const ok = st.ledger.violations.length === 0;
  console.log(`${ok ? 'PASS' : 'FAIL'}: ${results.length} cycles, ${st.ledger.violations.length} violations, ` +
    `${st.ledger.anomalies.length} anomalies; rerun with --seed ${st.opts.seed}; data in ${st.dir}`);
  return ok;
}

async function main() {
  const opts = parseArgs(process.argv);
  const st = { opts, ledger: new Ledger(), rng: rngFrom(opts.seed), cycle: 0, topics: [],
               dir: fs.mkdtempSync(path.join(os.tmpdir(), 'smqd-failover-')) };
  console.log(`failover: ${opts.cycles} cycles + ${opts.pgFailover} PostgreSQL failover, ${opts.nodes} nodes, ` +
    `seed ${opts.seed}, dir ${st.dir}`);
  const guard = setTimeout(() => { console.log(`FAIL: over --max-seconds ${opts.maxSeconds}`); cleanup(st); process.exit(1); },
    opts.maxSeconds * 1000);
  const results = [];
  let ok = false;
  try {
    await startPg(st);
    await makeNodes(st);
    for (const n of st.nodes) await startNode(n);
    startSampler(st);
    await startFront(st);
    const first = await activeNode(st, null, 30000);
    await traffic.createQueues(mnsOf(first.endpoint));
    await mnsOf(first.endpoint).createQueue(HANDLE_Q, { VisibilityTimeout: 30 });
    await mnsOf(first.endpoint).createQueue(PROBE_Q, {});
    await startPushSink(st, first);
    const plan = [];
    for (let i = 0; i < opts.cycles; i++) plan.push(ACTIONS[(i + opts.seed) % ACTIONS.length]);
    for (let i = 0; i < opts.pgFailover && st.pg.length > 1; i++) plan.push('pg');
    for (const action of plan) {
      const r = await runCycle(st, action);
      console.log(JSON.stringify(r));
      results.push(r);
      st.cycle++;
    }
    await finish(st);
    ok = report(st, results);
  } catch (e) {
    st.ledger.violation(st.cycle, 'run', e.stack || String(e));
    report(st, results);
  } finally {
    clearTimeout(guard);
    saveLogs(st);
    cleanup(st);
    if ((ok && !opts.keep)) fs.rmSync(st.dir, { recursive: true, force: true });
  }
  process.exit(ok ? 0 : 1);
}

if (require.main === module) main();

module.exports = { parseArgs };
