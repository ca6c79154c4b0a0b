'use strict';
// crash.test.js — kill -9 in the middle of traffic, with the official Node SDK.
//
// Producers and consumers run concurrently against a real smqd; it is killed
// with SIGKILL while requests are in flight, restarted on the same data, and
// the queue is drained.  Invariants (at-least-once, durable acknowledgements):
//   - every send that was acknowledged (201) is delivered after the restart
//     or was deleted before it (a delete cut off by the kill may or may not
//     have been committed: only such a message may be missing);
//   - no message whose delete was acknowledged (204) ever comes back;
//   - every message seen after the restart was sent (ids and bodies match
//     what the server acknowledged, when it acknowledged it).

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer, client } = require('./harness');

const QUEUE = 'crash-q';
const PRODUCERS = 6;
const CONSUMERS = 3;
const TRAFFIC_MS = 1500;           // at least this much traffic before the kill
const MIN_SENDS = 50;              // ... and at least this many acknowledged sends
const MIN_DELETES = 10;            // ... and deletes, however slow the machine
const TRAFFIC_MAX_MS = 30000;
const VISIBILITY_MS = 1000;        // the queue's VisibilityTimeout

// expired(e, t0) — a delete refused with MessageNotExist whose handle may have run out:
// at least VisibilityTimeout passed since the receive that gave it was sent (t0), so the
// message may have been delivered again under a new handle. On a loaded machine a consumer
// can take that long between receive and delete; that is at-least-once, not a failure.
// A refusal sooner than that (the handle was certainly valid) still fails the test.
function expired(e, t0) {
  return e.name === 'MNSMessageNotExistError' && Date.now() - t0 >= VISIBILITY_MS;
}

let servers = [];
after(async () => {
  for (const s of servers) await s.kill9();
  for (const s of servers) require('fs').rmSync(s.dir, { recursive: true, force: true });
});

// Runs until the server dies: every acknowledged send is recorded.
async function produce(mns, id, acked) {
  for (let i = 0; ; i++) {
    const body = `p${id}-${i}`;
    try {
      const r = await mns.sendMessage(QUEUE, { MessageBody: body });
      acked.set(body, r.body.MessageId);
    } catch (e) {
      if (e.name && e.name.startsWith('MNS')) throw e;   // an MNS error is a real failure
      return;                                          // connection refused/reset: killed
    }
  }
}

// Receives and deletes until the server dies: every acknowledged delete is
// recorded, and a delete whose answer the kill cut off goes to `unknown`.
async function consume(mns, deleted, unknown) {
  for (;;) {
    let msgs;
    const t0 = Date.now();
    try {
      msgs = (await mns.batchReceiveMessage(QUEUE, 16, 1)).body;
    } catch (e) {
      if (e.name === 'MNSMessageNotExistError') continue;
      if (e.name && e.name.startsWith('MNS')) throw e;
      return;
    }
    for (const m of msgs) {
      try {
        await mns.deleteMessage(QUEUE, m.ReceiptHandle);
        deleted.set(m.MessageBody, m.MessageId);
      } catch (e) {
        if (expired(e, t0)) continue;              // not deleted: it comes back
        if (e.name && e.name.startsWith('MNS')) throw e;
        unknown.set(m.MessageBody, m.MessageId);
        return;
      }
    }
  }
}

// After the restart: receive everything (in-flight ones come back after the
// 1 s visibility timeout) until the queue stays empty.
async function drain(mns) {
  const seen = new Map();
  for (let empty = 0; empty < 3;) {
    let msgs;
    const t0 = Date.now();
    try {
      msgs = (await mns.batchReceiveMessage(QUEUE, 16, 1)).body;
    } catch (e) {
      if (e.name !== 'MNSMessageNotExistError') throw e;
      const attrs = (await mns.getQueueAttributes(QUEUE)).body;
      empty = (attrs.ActiveMessages === '0' && attrs.InactiveMessages === '0' &&
               attrs.DelayMessages === '0') ? empty + 1 : 0;
      continue;
    }
    for (const m of msgs) {
      seen.set(m.MessageBody, m.MessageId);
      try {
        await mns.deleteMessage(QUEUE, m.ReceiptHandle);
      } catch (e) {
        if (!expired(e, t0)) throw e;              // it comes back and is deleted then
      }
    }
  }
  return seen;
}

test('SIGKILL during concurrent sends, receives and deletes loses nothing acknowledged',
  { timeout: 60000 }, async () => {
    let server = await startServer();
    servers.push(server);
    let mns = client(server);
    await mns.createQueue(QUEUE, { VisibilityTimeout: 1 });

    const acked = new Map();
    const deleted = new Map();
    const unknown = new Map();
    const loops = [];
    for (let p = 0; p < PRODUCERS; p++) loops.push(produce(mns, p, acked));
    for (let c = 0; c < CONSUMERS; c++) loops.push(consume(mns, deleted, unknown));
    // The kill comes once there is enough traffic for the invariants to mean something,
    // not after a fixed time: how much a loaded machine (or an ASan build) does in 1.5 s
    // varies, and the counts asserted below would then fail with nothing wrong.
    const t0 = Date.now();
    while (Date.now() - t0 < TRAFFIC_MS ||
           ((acked.size <= MIN_SENDS || deleted.size <= MIN_DELETES) &&
            Date.now() - t0 < TRAFFIC_MAX_MS)) {
      await new Promise((r) => setTimeout(r, 50));
    }
    await server.kill9();
    await Promise.all(loops);
    console.log(`traffic: ${acked.size} acknowledged sends, ${deleted.size} acknowledged deletes before SIGKILL`);
    assert.ok(acked.size > MIN_SENDS, `traffic too small to mean anything: ${acked.size} sends`);
    assert.ok(deleted.size > MIN_DELETES, `traffic too small to mean anything: ${deleted.size} deletes`);

    server = await startServer(server.dir);
    servers.push(server);
    mns = client(server);
    const after = await drain(mns);

    assert.ok(unknown.size <= CONSUMERS, 'at most one delete per consumer was in flight');
    for (const [body, id] of acked) {
      assert.ok(after.has(body) || deleted.has(body) || unknown.has(body),
        `acknowledged send ${body} (${id}) was lost`);
    }
    for (const [body, id] of deleted) {
      assert.ok(!after.has(body), `acknowledged delete of ${body} (${id}) came back`);
    }
    for (const [body, id] of after) {
      assert.match(body, /^p\d+-\d+$/, `unknown message ${body}`);
      if (acked.has(body)) assert.equal(id, acked.get(body), `message id of ${body} changed`);
    }
    const exit = await server.stop();
    assert.deepEqual(exit, { code: 0, signal: null });
  });
