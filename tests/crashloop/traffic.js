'use strict';
// traffic.js — the clients of one crash cycle, official SDK calls only.
//
// Two queues, so that a kill finds both kinds of request in flight:
//   BUSY    producers with BatchSend of 16 (and single sends), consumers with BatchReceive of
//           16, BatchDelete and single deletes: the kill usually lands inside a batch.
//   SPARSE  one slow producer and several long-polling consumers (waitseconds 1..5): the queue
//           is empty most of the time, so the kill usually lands on parked long polls.
// Some received messages are deliberately not deleted, so redelivery after the visibility
// timeout (across restarts) is exercised too.
//
// Every loop ends when the server is gone (ctx.dead).  A transport error before the kill, or an
// MNS error that is not part of normal operation, is recorded as an anomaly and traffic goes on.

const BUSY = 'cl-busy';
const SPARSE = 'cl-sparse';
const QUEUE_ATTRS = {
  VisibilityTimeout: 2,            // redeliveries happen a cycle or two later
  MessageRetentionPeriod: 604800,  // the maximum: nothing expires during a run
  PollingWaitSeconds: 0
};
const BATCH = 16;
const MAX_BACKLOG = 3000;          // producers pause above this, so restarts stay quick
const ABANDON_P = 0.05;            // share of received messages left to time out
const PARKED_MS = 100;             // a long poll in flight this long is parked on the server

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

function isMns(e) {
  return Boolean(e && typeof e.name === 'string' && e.name.startsWith('MNS'));
}

// ctx: {mns, cycle, rng, ledger, dead, killed, inflight: Set, inDrain, outageErrors}
// outageErrors (tests/failover/run.js): MNS error names (e.g. MNSServiceUnavailableError) that,
// once the fault was injected (killed), mean "outcome unknown" like a transport error, not an
// anomaly; the crash loop passes none.
function newContext(mns, cycle, rng, ledger, outageErrors = new Set()) {
  return { mns, cycle, rng, ledger, dead: false, killed: false, inflight: new Set(), inDrain: false,
           outageErrors };
}

// An MNS error that counts as an anomaly: not one of the fault's expected outage answers.
function mnsAnomaly(ctx, e) {
  return isMns(e) && !(ctx.killed && ctx.outageErrors.has(e.name));
}

// Runs one SDK call while it is visible in ctx.inflight, for the kill snapshot.
async function tracked(ctx, info, fn) {
  const rec = Object.assign({ startedAt: now() }, info);
  ctx.inflight.add(rec);
  try {
    return await fn(rec.startedAt);
  } finally {
    ctx.inflight.delete(rec);
  }
}

// A failure without an MNS answer: expected once the kill was sent, an anomaly before.
function transportFailure(ctx, what, e) {
  if (!ctx.killed) ctx.ledger.anomaly(ctx.cycle, 'transport-error', `${what}: ${e && e.message}`);
}

function pick(rng, values) {
  return values[Math.floor(rng() * values.length)];
}

// Sends bodies with one BatchSend (batch) or one SendMessage; records the acknowledgements.
async function send(ctx, queue, bodies, batch) {
  const { mns, ledger, cycle } = ctx;
  ledger.attempt(queue, bodies);
  let r;
  try {
    r = await tracked(ctx, { kind: batch ? 'batchSend' : 'send', batch }, () => (batch
      ? mns.batchSendMessage(queue, bodies.map((b) => ({ MessageBody: b })))
      : mns.sendMessage(queue, { MessageBody: bodies[0] })));
  } catch (e) {
    ledger.counts.unknownSends += bodies.length;
    if (mnsAnomaly(ctx, e)) ledger.anomaly(cycle, 'send-error', `${queue}: ${e.name}: ${e.message}`);
    else transportFailure(ctx, 'send', e);
    return;
  }
  const items = batch ? r.body : [r.body];
  if (r.code !== 201 || !Array.isArray(items) || items.length !== bodies.length) {
    ledger.anomaly(cycle, 'send-answer', `${queue}: HTTP ${r.code}, ${JSON.stringify(r.body)}`);
    return;
  }
  items.forEach((m, i) => ledger.sendAcked(cycle, queue, bodies[i], m.MessageId, m.MessageBodyMD5));
}

// One ReceiveMessage (n = 1) or BatchReceiveMessage; -> messages ([] when none).
async function receive(ctx, queue, n, wait) {
  const { mns, ledger, cycle } = ctx;
  let startedAt = 0;
  try {
    const r = await tracked(ctx, { kind: n > 1 ? 'batchReceive' : 'receive', batch: n > 1, wait },
      (t) => {
        startedAt = t;
        return n > 1 ? mns.batchReceiveMessage(queue, n, wait) : mns.receiveMessage(queue, wait);
      });
    const msgs = n > 1 ? r.body : [r.body];
    if (!Array.isArray(msgs) || !msgs.every((m) => m && typeof m.MessageBody === 'string')) {
      ledger.anomaly(cycle, 'receive-answer', `${queue}: HTTP ${r.code}, ${JSON.stringify(r.body)}`);
      return [];
    }
    for (const m of msgs) ledger.received(cycle, queue, m, startedAt, ctx.inDrain);
    return msgs;
  } catch (e) {
    if (e.name === 'MNSMessageNotExistError') return [];
    if (mnsAnomaly(ctx, e)) ledger.anomaly(cycle, 'receive-error', `${queue}: ${e.name}: ${e.message}`);
    else transportFailure(ctx, 'receive', e);
    return [];
  }
}

// BatchDeleteMessage: 204 deletes all, 404 <Errors> lists the handles that were not deleted.
async function deleteBatch(ctx, queue, msgs) {
  const { mns, ledger, cycle } = ctx;
  const bodies = msgs.map((m) => m.MessageBody);
  ledger.deleteAttempted(bodies);
  let r;
  try {
    r = await tracked(ctx, { kind: 'batchDelete', batch: true },
      () => mns.batchDeleteMessage(queue, msgs.map((m) => m.ReceiptHandle)));
  } catch (e) {
    if (mnsAnomaly(ctx, e)) {
      ledger.deleteRefused(bodies);
      ledger.anomaly(cycle, 'delete-error', `${queue}: ${e.name}: ${e.message}`);
    } else {
      ledger.deleteUnanswered(bodies);
      transportFailure(ctx, 'batch delete', e);
    }
    return;
  }
  const at = now();
  const failed = new Map();
  if (r.code === 404 && Array.isArray(r.body)) {
    for (const err of r.body) failed.set(err.ReceiptHandle, err.ErrorCode);
  } else if (r.code !== 204) {
    ledger.deleteUnanswered(bodies);
    ledger.anomaly(cycle, 'delete-answer', `${queue}: HTTP ${r.code}, ${JSON.stringify(r.body)}`);
    return;
  }
  for (const m of msgs) {
    const code = failed.get(m.ReceiptHandle);
    if (code === undefined) ledger.deleteAcked(cycle, queue, m, at);
    else refused(ctx, queue, m, code);
  }
}

// A handle may legitimately be stale (its visibility timed out and someone else received the
// message); anything else is worth a look.
function refused(ctx, queue, m, code) {
  ctx.ledger.deleteRefused([m.MessageBody]);
  if (code === 'MessageNotExist' || code === 'ReceiptHandleError') ctx.ledger.counts.staleDeletes++;
  else ctx.ledger.anomaly(ctx.cycle, 'delete-error', `${queue} ${m.MessageBody}: ${code}`);
}

async function deleteOne(ctx, queue, m) {
  const { mns, ledger, cycle } = ctx;
  ledger.deleteAttempted([m.MessageBody]);
  try {
    const r = await tracked(ctx, { kind: 'delete', batch: false },
      () => mns.deleteMessage(queue, m.ReceiptHandle));
    if (r.code === 204) ledger.deleteAcked(cycle, queue, m, now());
    else ledger.anomaly(cycle, 'delete-answer', `${queue}: HTTP ${r.code}`);
  } catch (e) {
    if (mnsAnomaly(ctx, e)) refused(ctx, queue, m, e.name.replace(/^MNS(.*)Error$/, '$1'));
    else {
      ledger.deleteUnanswered([m.MessageBody]);
      transportFailure(ctx, 'delete', e);
    }
  }
}

async function deleteMsgs(ctx, queue, msgs, batch) {
  if (msgs.length === 0) return;
  if (batch) return deleteBatch(ctx, queue, msgs);
  for (const m of msgs) {
    if (ctx.dead) return;
    await deleteOne(ctx, queue, m);
  }
}

async function busyProducer(ctx, p) {
  for (let n = 0; !ctx.dead;) {
    if (ctx.ledger.backlog(BUSY) > MAX_BACKLOG) {
      await sleep(20);
      continue;
    }
    const batch = ctx.rng() < 0.6;
    const bodies = [];
    for (let k = 0; k < (batch ? BATCH : 1); k++) bodies.push(`c${ctx.cycle}-p${p}-${n++}`);
    await send(ctx, BUSY, bodies, batch);
  }
}

async function busyConsumer(ctx) {
  while (!ctx.dead) {
    const msgs = await receive(ctx, BUSY, ctx.rng() < 0.8 ? BATCH : 1, pick(ctx.rng, [0, 0, 1, 2]));
    const keep = msgs.filter(() => ctx.rng() >= ABANDON_P);
    await deleteMsgs(ctx, BUSY, keep, ctx.rng() < 0.7);
  }
}

async function sparseProducer(ctx) {
  for (let n = 0; !ctx.dead;) {
    await sleep(50 + ctx.rng() * 350);
    if (ctx.dead) return;
    const batch = ctx.rng() < 0.3;
    const bodies = [];
    for (let k = 0; k < (batch ? 1 + Math.floor(ctx.rng() * 4) : 1); k++) bodies.push(`c${ctx.cycle}-s-${n++}`);
    await send(ctx, SPARSE, bodies, batch);
  }
}

async function longPoller(ctx) {
  while (!ctx.dead) {
    const wait = 1 + Math.floor(ctx.rng() * 5);
    const msgs = await receive(ctx, SPARSE, ctx.rng() < 0.5 ? BATCH : 1, wait);
    const keep = msgs.filter(() => ctx.rng() >= ABANDON_P);
    await deleteMsgs(ctx, SPARSE, keep, ctx.rng() < 0.5);
  }
}

// -> promises of every loop; they resolve once ctx.dead is set and their request failed.
function start(ctx, shape) {
  const loops = [];
  for (let p = 0; p < shape.producers; p++) loops.push(busyProducer(ctx, p));
  for (let c = 0; c < shape.consumers; c++) loops.push(busyConsumer(ctx));
  loops.push(sparseProducer(ctx));
  for (let l = 0; l < shape.longPollers; l++) loops.push(longPoller(ctx));
  return loops;
}

// What was in flight at the moment of the kill.
function snapshot(ctx) {
  const t = now();
  const s = { requests: ctx.inflight.size, batchSend: 0, batchReceive: 0, batchDelete: 0, publish: 0,
              longPolls: 0, parkedLongPolls: 0 };
  for (const rec of ctx.inflight) {
    if (rec.kind in s) s[rec.kind]++;
    if (rec.wait > 0) {
      s.longPolls++;
      if (t - rec.startedAt >= PARKED_MS) s.parkedLongPolls++;
    }
  }
  s.midBatch = s.batchSend + s.batchReceive + s.batchDelete > 0;
  s.midLongPoll = s.parkedLongPolls > 0;
  return s;
}

// Receives and deletes everything left, until both queues report no message for two rounds in
// a row (Inactive ones come back after the visibility timeout).  Bounded by deadlineMs.
async function drain(ctx, deadlineMs) {
  const end = now() + deadlineMs;
  for (let emptyRounds = 0; emptyRounds < 2;) {
    if (now() > end) throw new Error(`final drain did not empty the queues within ${deadlineMs} ms`);
    let got = 0;
    for (const q of [BUSY, SPARSE]) got += await drainVisible(ctx, q);
    if (got === 0 && await queuesEmpty(ctx)) emptyRounds++;
    else if (got === 0) await sleep(250);   // only Inactive ones left: wait for their timeout
    else emptyRounds = 0;
  }
}

// Receives (no wait) and deletes until nothing is visible; -> messages received.
async function drainVisible(ctx, queue) {
  let total = 0;
  for (;;) {
    const msgs = await receive(ctx, queue, BATCH, 0);
    if (msgs.length === 0) return total;
    total += msgs.length;
    await deleteMsgs(ctx, queue, msgs, true);
  }
}

async function queuesEmpty(ctx) {
  for (const q of [BUSY, SPARSE]) {
    const a = (await ctx.mns.getQueueAttributes(q)).body;
    if (a.ActiveMessages !== '0' || a.InactiveMessages !== '0' || a.DelayMessages !== '0') return false;
  }
  return true;
}

async function createQueues(mns) {
  for (const q of [BUSY, SPARSE]) await mns.createQueue(q, QUEUE_ATTRS);
}

// The helpers and queue attributes are shared with the publish traffic (topic.js).
module.exports = { newContext, start, snapshot, drain, createQueues, sleep, now, QUEUE_ATTRS, tracked, mnsAnomaly,
                   transportFailure, pick };
