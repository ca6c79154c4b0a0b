#!/usr/bin/env node
'use strict';
// run.js — crash loop: concurrent SDK traffic, SIGKILL at a random moment, restart on the same
// data, check every invariant, again and again.  See README.md in this directory.
//
//   SMQD_BIN=build/smqd node tests/crashloop/run.js [--cycles N] [--seed S]
//       [--sync full|normal|alternate] [--min-ms 200] [--max-ms 1500] [--quiet] [--keep]
//       [--producers 4] [--consumers 3] [--long-pollers 4] [--publishers 1] [--max-seconds T]
//       [--json FILE] [--power-cut off|all|some|mixed] [--expect-loss]
//
// --publishers N publishes to a topic with four queue subscriptions and two HTTP subscriptions
// (topic.js), whose pushes go to an endpoint in this process (push_endpoint.js, up for the whole
// run); 0 leaves the topic out.  Every acknowledged publish must reach every subscribed queue and
// every HTTP subscription's endpoint, with a verified signature (publish_ledger.js).
//
// --power-cut puts the database on powerfs (tests/powercut/, POWERFS_BIN names it) and follows
// every SIGKILL with a power cut: all unsynced writes lost, or a random subset of them kept
// ("some"), or one then the other ("mixed").  --expect-loss turns the run into a negative
// control: it succeeds only if acknowledged sends were lost and the database stayed intact.
//
// Exit status: 0 no violation and no anomaly, 1 violations or anomalies found (data dir and
// the logs of the failing cycles are kept and printed), 2 could not run.

const fs = require('fs');
const os = require('os');
const path = require('path');
const harness = require('../integration/node/harness.js');
const { Ledger } = require('./ledger.js');
const dbcheck = require('./dbcheck.js');
const traffic = require('./traffic.js');
const topic = require('./topic.js');
const pushEndpoint = require('./push_endpoint.js');
const powerfs = require('../powercut/powerfs.js');

const SANITIZER = /ERROR: (AddressSanitizer|LeakSanitizer|ThreadSanitizer|MemorySanitizer)|runtime error:|SUMMARY: \w+Sanitizer/;
const LOG_PROBLEM = /^\S+ (ERROR|WARN) .*$/gm;
// The one warning every start as root gets (CI runs as root): a fact of the test machine.
const AS_ROOT = / WARN running as root: /;
const LOG_LINE = /^\d{4}-\d\d-\d\dT\S+Z (ERROR|WARN|INFO|DEBUG) /;
const DRAIN_MS = 60000;
const LOOPS_STOP_MS = 20000;
const PRINT_PER_KIND = 20;

function parseArgs(argv) {
  const o = { cycles: 20, seed: null, sync: 'full', minMs: 200, maxMs: 1500, quiet: false,
              keep: false, producers: 4, consumers: 3, longPollers: 4, publishers: 1, maxSeconds: 0, json: '',
              powerCut: 'off', expectLoss: false };
  const names = { '--cycles': 'cycles', '--seed': 'seed', '--sync': 'sync', '--min-ms': 'minMs',
                  '--max-ms': 'maxMs', '--producers': 'producers', '--consumers': 'consumers',
                  '--long-pollers': 'longPollers', '--publishers': 'publishers', '--max-seconds': 'maxSeconds', '--json': 'json',
                  '--power-cut': 'powerCut' };
  for (let i = 2; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quiet') o.quiet = true;
    else if (a === '--keep') o.keep = true;
    else if (a === '--expect-loss') o.expectLoss = true;
    else if (names[a] && i + 1 < argv.length) o[names[a]] = argv[++i];
    else throw new Error(`unknown or incomplete argument ${a} (see the header of run.js)`);
  }
  for (const k of ['cycles', 'minMs', 'maxMs', 'producers', 'consumers', 'longPollers', 'publishers', 'maxSeconds']) {
    o[k] = Number(o[k]);
    if (!Number.isInteger(o[k]) || o[k] < 0) throw new Error(`--${k}: not a non-negative integer`);
  }
  if (!['full', 'normal', 'alternate'].includes(o.sync)) throw new Error('--sync: full, normal or alternate');
  if (o.maxMs < o.minMs) throw new Error('--max-ms must be >= --min-ms');
  if (!['off', 'all', 'some', 'mixed'].includes(o.powerCut)) throw new Error('--power-cut: off, all, some or mixed');
  if (o.expectLoss && o.powerCut === 'off') throw new Error('--expect-loss needs --power-cut');
  o.seed = o.seed === null ? (Date.now() ^ process.pid) >>> 0 : Number(o.seed) >>> 0;
  // Generous, but a hung run still ends: ~3 s per cycle expected.
  if (!o.maxSeconds) o.maxSeconds = 120 + o.cycles * 15;
  return o;
}

// mulberry32: small, seedable; the seed fixes kill moments and traffic choices (not the
// scheduler, so a seed narrows a failure down rather than replaying it bit for bit).
function rngFrom(seed) {
  let a = seed >>> 0;
  return function rng() {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function syncFor(opts, cycle) {
  if (opts.sync !== 'alternate') return opts.sync;
  return cycle % 2 === 0 ? 'full' : 'normal';
}

// Same layout as harness.js, with the sync mode of this cycle: rewritten before every start,
// so one data dir can see both modes.
function writeConfig(dir, dataDir, sync) {
  fs.writeFileSync(path.join(dir, 'smqd.conf'), [
    '[server]', 'listen = 127.0.0.1:0',
    '[storage]', `path = ${dataDir}/smqd.db`, `sync = ${sync}`,
    '[auth]', `access_key_id = ${harness.AK}`, `access_key_secret = ${harness.SK}`,
    '[log]', 'level = info', 'requests = true',
    '[admin]', 'listen = 127.0.0.1:0', ''
  ].join('\n'), { mode: 0o600 });
}

// ---- the server of the moment, killed by PID whatever happens to this process ----

let current = null;
let currentDisk = null;            // the powerfs mount of a --power-cut run

function killCurrent() {
  if (current && current.proc.exitCode === null && current.proc.signalCode === null) {
    try { process.kill(current.pid, 'SIGKILL'); } catch (e) { /* already gone */ }
  }
}

// For exits that cannot wait: the server, then its disk.
function abandonAll() {
  killCurrent();
  if (currentDisk) currentDisk.unmountNow();
}

function installGuards(opts, dir) {
  process.on('exit', abandonAll);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => {
      abandonAll();
      console.error(`crashloop: ${sig}, stopped; data kept in ${dir}`);
      process.exit(2);
    });
  }
  const t = setTimeout(() => {
    console.error(`crashloop: time limit of ${opts.maxSeconds} s exceeded, stopping`);
    abandonAll();
    process.exit(1);
  }, opts.maxSeconds * 1000);
  t.unref();
}

async function start(st, sync) {
  const dir = st.dir;
  writeConfig(dir, st.dataDir, sync);
  const t0 = traffic.now();
  current = await harness.startServer(dir);
  current.startMs = traffic.now() - t0;
  // Pushes signed by this server name its own listener's certificate URL: trusted from now on.
  if (st.endpoint) await trustServer(st, current);
  return current;
}

async function trustServer(st, server) {
  let sameKey;
  try {
    sameKey = await st.endpoint.trust(server.endpoint);
  } catch (e) {
    st.ledger.violation(st.cycleNow, 'signing-cert', `the certificate of ${server.endpoint}: ${e.message}`);
    return;
  }
  if (!sameKey) st.ledger.violation(st.cycleNow, 'signing-key-changed', `${server.endpoint} serves another signing key than the first server`);
}

function withTimeout(promise, ms, what) {
  let timer;
  const limit = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(what)), ms);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

// ---- per-cycle checks ----

function checkLog(ledger, cycle, log) {
  const lines = log.split('\n');
  const hit = lines.findIndex((l) => SANITIZER.test(l));
  if (hit >= 0) {
    // The report is the run of lines that are not smqd's own "TIME LEVEL ..." lines.
    let end = hit + 1;
    while (end < lines.length && end < hit + 60 && !LOG_LINE.test(lines[end])) end++;
    ledger.violation(cycle, 'sanitizer', lines.slice(hit, end).join('\n'));
  }
  for (const m of log.match(LOG_PROBLEM) || []) if (!AS_ROOT.test(m)) ledger.anomaly(cycle, 'log', m);
}

function checkDisk(ledger, cycle, st) {
  const r = dbcheck.inspect(st.dir, st.reader, st.dataDir);
  if (r.integrity !== 'ok') ledger.violation(cycle, 'integrity', r.integrity);
  if (r.schema !== 'ok') ledger.violation(cycle, 'schema-lost', r.schema);
  for (const t of r.torn) ledger.violation(cycle, 'torn-row', t);
  // The subscribed queues hold notifications, checked against the publishes, not the sends.
  const subRows = r.rows.filter((row) => st.book.isSubQueue(row.queue));
  const sendRows = r.rows.filter((row) => !st.book.isSubQueue(row.queue));
  return ledger.checkDisk(cycle, sendRows) + st.book.checkDisk(cycle, subRows, r.notifs);
}

// Keeps the logs of the cycles that found something, next to the data.
function saveLog(dir, name, log) {
  const d = path.join(dir, 'logs');
  fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(path.join(d, name), log);
}

// The power cut after a kill: what the disk keeps of the writes no fsync covered.
// -> null without --power-cut, else {mode, pagesDropped, pagesKept} of this cut.
function powerCut(st, cycle) {
  if (!st.disk) return null;
  const mode = st.opts.powerCut === 'mixed' ? (cycle % 2 === 0 ? 'all' : 'some') : st.opts.powerCut;
  const before = st.disk.stats();
  st.disk.cut(mode === 'some' ? 1 + Math.floor(st.rng() * 0xfffffffe) : 0);
  const after = st.disk.stats();
  return { mode, pagesDropped: after.pages_dropped - before.pages_dropped,
           pagesKept: after.pages_kept - before.pages_kept };
}

// ---- one cycle ----

async function runCycle(st, cycle) {
  const { opts, ledger, rng, dir } = st;
  const sync = syncFor(opts, cycle);
  const killAfter = Math.round(opts.minMs + rng() * (opts.maxMs - opts.minMs));
  st.cycleNow = cycle;
  const server = await start(st, sync);
  const mns = harness.client(server);
  if (cycle === 0) await traffic.createQueues(mns);
  if (cycle === 0 && opts.publishers > 0) await topic.setup(mns, st.endpoint);
  if (cycle === 1 && opts.publishers > 0) await topic.createLateQueues(mns);

  const ctx = traffic.newContext(mns, cycle, rng, ledger);
  const exited = new Promise((resolve) => server.proc.once('exit', resolve));
  exited.then(() => { ctx.dead = true; });
  const before = { ...ledger.counts };
  const publishedBefore = st.book.counts.publishesAcked;
  const nViolations = ledger.violations.length;
  const nAnomalies = ledger.anomalies.length;
  const loops = traffic.start(ctx, opts).concat(topic.start(ctx, st.book, opts.publishers));

  const reason = await Promise.race([traffic.sleep(killAfter).then(() => 'kill'), exited.then(() => 'exited')]);
  const snap = traffic.snapshot(ctx);
  ctx.killed = true;
  if (reason === 'exited') {
    const e = await server.kill9();
    ledger.violation(cycle, 'server-exited', `smqd exited on its own (${JSON.stringify(e)}) after < ${killAfter} ms`);
  }
  await server.kill9();
  ctx.dead = true;
  await withTimeout(Promise.all(loops), LOOPS_STOP_MS, `cycle ${cycle}: clients did not stop after SIGKILL`);

  checkLog(ledger, cycle, server.log());
  const cut = powerCut(st, cycle);
  const rows = checkDisk(ledger, cycle, st);
  const summary = {
    cycle, sync, killAfter, startMs: Math.round(server.startMs), rowsOnDisk: rows, snap, cut,
    sends: ledger.counts.sendsAcked - before.sendsAcked,
    deletes: ledger.counts.deletesAcked - before.deletesAcked,
    publishes: st.book.counts.publishesAcked - publishedBefore,
    receives: ledger.counts.receives - before.receives,
    seenAfterRestart: ledger.counts.seenAfterRestart - before.seenAfterRestart,
    violations: ledger.violations.length - nViolations,
    anomalies: ledger.anomalies.length - nAnomalies
  };
  if (summary.violations || summary.anomalies) {
    saveLog(dir, `cycle-${cycle}.log`, server.log());
    if (st.prevLog) saveLog(dir, `cycle-${cycle - 1}.log`, st.prevLog);
  }
  st.prevLog = server.log();
  return summary;
}

function printCycle(opts, s) {
  if (opts.quiet && s.violations === 0 && s.anomalies === 0 && s.cycle % 50 !== 0) return;
  const k = s.snap;
  console.log(`cycle ${s.cycle} sync=${s.sync} kill@${s.killAfter}ms start=${s.startMs}ms ` +
    `+${s.sends} sent +${s.deletes} deleted +${s.publishes} published ${s.receives} received, ` +
    `${s.seenAfterRestart} seen after restart, ${s.rowsOnDisk} on disk; in flight ${k.requests} ` +
    `(batch send ${k.batchSend}/recv ${k.batchReceive}/del ${k.batchDelete}, publish ${k.publish}, ` +
    `long polls ${k.longPolls}, parked ${k.parkedLongPolls})` +
    (s.cut ? `; power cut (${s.cut.mode}): ${s.cut.pagesDropped} pages lost, ${s.cut.pagesKept} kept` : '') +
    (s.violations ? ` VIOLATIONS ${s.violations}` : '') + (s.anomalies ? ` anomalies ${s.anomalies}` : ''));
}

// ---- the end: drain everything, stop cleanly, check once more ----

async function finish(st) {
  const { opts, ledger, rng, dir } = st;
  const cycle = opts.cycles;
  const sync = syncFor(opts, cycle);
  st.cycleNow = cycle;
  const server = await start(st, sync);
  const ctx = traffic.newContext(harness.client(server), cycle, rng, ledger);
  let queueLost = false;
  ctx.inDrain = true;
  try {
    await traffic.drain(ctx, DRAIN_MS);
    if (opts.publishers > 0) {
      await topic.createLateQueues(ctx.mns);
      await topic.drain(ctx, st.book, DRAIN_MS);
    }
  } catch (e) {
    // A queue (or the topic) that is gone was created, acknowledged, in cycle 0: a lost write
    // like a lost send (sync = normal can lose it to a power cut), not a drain that went wrong.
    queueLost = e.name === 'MNSQueueNotExistError' || e.name === 'MNSTopicNotExistError';
    ledger.violation(cycle, queueLost ? 'queue-lost' : 'drain', e.message);
  }
  const exit = await server.stop();
  if (exit.code !== 0 || exit.signal !== null) {
    ledger.violation(cycle, 'stop', `SIGTERM did not stop smqd cleanly: ${JSON.stringify(exit)}`);
  }
  checkLog(ledger, cycle, server.log());
  const rows = checkDisk(ledger, cycle, st);
  if (rows !== 0) {
    ledger.violation(cycle, queueLost ? 'queue-lost' : 'drain',
      `${rows} messages still on disk after the drain` + (queueLost ? ' (of a lost queue)' : ''));
  }
  ledger.checkFinal(cycle);
  st.book.checkFinal(cycle);
  return server.log();
}

function totals(st, results) {
  const c = st.ledger.counts;
  return {
    date: new Date().toISOString(), smqd: process.env.SMQD_BIN, seed: st.opts.seed, sync: st.opts.sync,
    cycles: results.length, killWindowMs: [st.opts.minMs, st.opts.maxMs],
    seconds: Math.round((traffic.now() - st.t0) / 1000),
    sendsAcked: c.sendsAcked, deletesAcked: c.deletesAcked, receives: c.receives,
    redeliveries: c.redeliveries, staleDeletes: c.staleDeletes,
    unknownSends: c.unknownSends, unknownDeletes: c.unknownDeletes,
    seenAfterRestart: c.seenAfterRestart,
    publishers: st.opts.publishers, publish: { ...st.book.counts },
    killsMidPublish: results.filter((s) => s.snap.publish > 0).length,
    killsMidBatch: results.filter((s) => s.snap.midBatch).length,
    killsMidBatchSend: results.filter((s) => s.snap.batchSend > 0).length,
    killsMidBatchReceive: results.filter((s) => s.snap.batchReceive > 0).length,
    killsMidBatchDelete: results.filter((s) => s.snap.batchDelete > 0).length,
    killsMidLongPoll: results.filter((s) => s.snap.midLongPoll).length,
    maxStartMs: Math.max(0, ...results.map((s) => s.startMs)),
    maxRowsOnDisk: Math.max(0, ...results.map((s) => s.rowsOnDisk)),
    powerCut: st.opts.powerCut,
    pagesLostToCuts: results.reduce((n, s) => n + (s.cut ? s.cut.pagesDropped : 0), 0),
    violations: st.ledger.violations.length, anomalies: st.ledger.anomalies.length
  };
}

// The first few of each kind: one lost batch would otherwise print thousands of lines.
function printSome(label, list, perKind = PRINT_PER_KIND) {
  const byKind = new Map();
  for (const v of list) {
    const n = (byKind.get(v.kind) || 0) + 1;
    byKind.set(v.kind, n);
    if (n <= perKind) console.log(`${label} cycle ${v.cycle} ${v.kind}: ${v.detail}`);
  }
  for (const [kind, n] of byKind) {
    if (n > perKind) console.log(`${label} ${kind}: ${n - perKind} more (--json FILE lists all)`);
  }
}

function report(st, results) {
  const t = totals(st, results);
  // A negative control finds thousands by design: a few of each kind show what they look like.
  printSome('VIOLATION', st.ledger.violations, st.opts.expectLoss ? 2 : PRINT_PER_KIND);
  printSome('anomaly', st.ledger.anomalies);
  console.log('RESULT ' + JSON.stringify(t));
  if (st.opts.json) fs.writeFileSync(st.opts.json, JSON.stringify({ totals: t, violations: st.ledger.violations,
    anomalies: st.ledger.anomalies, cycles: results }, null, 1));
  return t;
}

// ---- the disk of a --power-cut run ----

async function mountDisk(st) {
  st.dataDir = path.join(st.dir, 'disk');
  st.disk = currentDisk = await powerfs.mount(st.dataDir);
}

// The mount holds the only copy of the database: keep one beside the logs when asked to.
async function unmountDisk(st) {
  if (!st.disk) return;
  const bad = st.ledger.violations.length || st.ledger.anomalies.length;
  if ((bad && !st.opts.expectLoss) || st.opts.keep) {
    const copy = path.join(st.dir, 'disk-copy');
    fs.mkdirSync(copy, { recursive: true });
    for (const f of fs.readdirSync(st.dataDir)) {
      if (f !== '.powerfs') fs.copyFileSync(path.join(st.dataDir, f), path.join(copy, f));
    }
  }
  const stats = st.disk.stats();
  const exit = await st.disk.unmount();
  currentDisk = null;
  if (exit.code !== 0 || SANITIZER.test(st.disk.log())) {
    st.ledger.violation(st.opts.cycles, 'powerfs', `powerfs ended with ${JSON.stringify(exit)}: ${st.disk.log()}`);
  }
  console.log('powerfs: ' + JSON.stringify(stats));
}

// The negative control's verdict: acknowledged sends were lost (the check can bite), and
// nothing but lost writes went wrong (SQLite's file stayed intact, smqd never crashed).
const NOT_FROM_LOST_WRITES = ['integrity', 'schema-lost', 'torn-row', 'sanitizer', 'harness', 'server-exited', 'stop', 'drain',
  'powerfs'];
function lossShown(st) {
  const kinds = new Set(st.ledger.violations.map((v) => v.kind));
  const lost = st.ledger.violations.filter((v) => v.kind === 'send-lost').length;
  const other = NOT_FROM_LOST_WRITES.filter((k) => kinds.has(k));
  console.log(`expect-loss: ${lost} acknowledged sends lost` +
    (other.length ? `; but also ${other.join(', ')}: FAIL` : lost ? ': the check bites, as it must' :
      ': nothing lost, so this check could not tell a missing fsync: FAIL'));
  return lost > 0 && other.length === 0;
}

async function main() {
  let opts;
  let reader;
  try {
    opts = parseArgs(process.argv);
    reader = dbcheck.requireReader();
    if (!process.env.SMQD_BIN || !fs.existsSync(process.env.SMQD_BIN)) {
      throw new Error(`SMQD_BIN must point to the smqd binary (got '${process.env.SMQD_BIN || ''}')`);
    }
  } catch (e) {
    console.error('crashloop: ' + e.message);
    return 2;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'smqd-crashloop-'));
  installGuards(opts, dir);
  const ledger = new Ledger();
  const st = { opts, reader, dir, dataDir: dir, disk: null, ledger, book: topic.newLedger(ledger),
               rng: rngFrom(opts.seed), prevLog: '', t0: traffic.now(), endpoint: null, cycleNow: 0 };
  console.log(`crashloop: ${opts.cycles} cycles, seed ${opts.seed}, sync ${opts.sync}, ` +
    `kill after ${opts.minMs}..${opts.maxMs} ms, power cut ${opts.powerCut}, data ${dir}, smqd ${process.env.SMQD_BIN}`);
  const results = [];
  try {
    if (opts.powerCut !== 'off') await mountDisk(st);
    // One endpoint for the whole run, in this process: it outlives every kill of smqd.
    if (opts.publishers > 0) {
      st.endpoint = await pushEndpoint.start({ book: st.book, ledger, cycleOf: () => st.cycleNow,
                                               failFirst: topic.failFirst });
    }
    for (let cycle = 0; cycle < opts.cycles; cycle++) {
      const s = await runCycle(st, cycle);
      results.push(s);
      printCycle(opts, s);
    }
    const log = await finish(st);
    if (st.ledger.violations.length || st.ledger.anomalies.length) saveLog(dir, 'final.log', log);
  } catch (e) {
    st.ledger.violation(results.length, 'harness', e.stack || e.message);
    if (current) saveLog(dir, 'aborted.log', current.log());
  } finally {
    killCurrent();
    if (st.endpoint) await st.endpoint.close();
    await unmountDisk(st);
  }
  const t = report(st, results);
  const bad = opts.expectLoss ? !lossShown(st) : t.violations > 0 || t.anomalies > 0;
  if (bad || opts.keep) console.log(`crashloop: data and logs kept in ${dir} (rerun with --seed ${opts.seed})`);
  else fs.rmSync(dir, { recursive: true, force: true });
  return bad ? 1 : 0;
}

if (require.main === module) {
  main().then((code) => { process.exitCode = code; }, (e) => {
    console.error(e);
    abandonAll();
    process.exitCode = 2;
  });
}

module.exports = { parseArgs, rngFrom, checkLog };
