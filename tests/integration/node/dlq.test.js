'use strict';
// dlq.test.js — dead-letter queues through the official Node SDK (@alicloud/mns 1.2.0)
// against a real smqd: the SDK passes a nested <DlqPolicy> through createQueue /
// setQueueAttributes unchanged, reads the policy back as flat attributes, and a message
// received MaxReceiveCount times arrives in the DLQ with its MessageId, body and EnqueueTime.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer, client, mnsError, adminRequest } = require('./harness');

let server;
let mns;

before(async () => {
  server = await startServer();
  mns = client(server);
});

after(async () => {
  if (server) {
    await server.stopCleanly();
    server.removeData();
  }
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// waitFor(what, fn, ms) — polls fn() until true, failing with `what` after ms.
async function waitFor(what, fn, ms) {
  const deadline = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() >= deadline) assert.fail(`${what} (not within ${ms} ms)`);
    await sleep(50);
  }
}

const activeOf = async (q) => Number((await mns.getQueueAttributes(q)).body.ActiveMessages);

// receiveOrNull(q[, waitSeconds]) — a long poll when waitSeconds > 0: it wakes when a
// message whose visibility timeout ran out is due again, however late a loaded machine
// runs smqd's timer (a fixed sleep before a short poll assumed it had run).
async function receiveOrNull(q, waitSeconds = 0) {
  try {
    return (await mns.receiveMessage(q, waitSeconds)).body;
  } catch (err) {
    if (err.name === 'MNSMessageNotExistError') return null;
    throw err;
  }
}

test('createQueue with a DlqPolicy and getQueueAttributes reading it back', async () => {
  await mns.createQueue('sdk-dlq');
  const r = await mns.createQueue('sdk-src', {
    VisibilityTimeout: 1,
    DlqPolicy: { Enabled: true, DeadLetterTargetQueue: 'sdk-dlq', MaxReceiveCount: 2 }
  });
  assert.equal(r.code, 201);
  const a = (await mns.getQueueAttributes('sdk-src')).body;
  assert.equal(a.DlqEnabled, 'True');
  assert.equal(a.DlqTargetQueue, 'sdk-dlq');
  assert.equal(a.DlqMaxReceiveCount, '2');
  assert.equal(a.VisibilityTimeout, '1');
  const plain = (await mns.getQueueAttributes('sdk-dlq')).body;
  assert.equal(plain.DlqEnabled, undefined);
  await assert.rejects(mns.setQueueAttributes('sdk-src',
    { DlqPolicy: { Enabled: true, DeadLetterTargetQueue: 'missing', MaxReceiveCount: 2 } }),
  mnsError('InvalidArgument'));
  await assert.rejects(mns.createQueue('sdk-self',
    { DlqPolicy: { Enabled: true, DeadLetterTargetQueue: 'sdk-self', MaxReceiveCount: 2 } }),
  mnsError('InvalidArgument'));
});

test('a message received MaxReceiveCount times moves to the DLQ intact', async () => {
  const sent = (await mns.sendMessage('sdk-src', { MessageBody: 'poison from node', Priority: 2 })).body;
  const first = await receiveOrNull('sdk-src');
  assert.equal(first.MessageId, sent.MessageId);
  const second = await receiveOrNull('sdk-src', 5);
  assert.equal(second.MessageId, sent.MessageId);
  assert.equal(second.DequeueCount, '2');
  assert.equal(await receiveOrNull('sdk-src', 3), null, 'the third receive finds it gone');

  const moved = await receiveOrNull('sdk-dlq');
  assert.ok(moved, 'it is in the DLQ');
  assert.equal(moved.MessageId, sent.MessageId);
  assert.equal(moved.MessageBody, 'poison from node');
  assert.equal(moved.EnqueueTime, first.EnqueueTime);
  assert.equal(moved.Priority, '2');
  assert.equal(moved.DequeueCount, '1');
  await mns.deleteMessage('sdk-dlq', moved.ReceiptHandle);
  const a = (await mns.getQueueAttributes('sdk-src')).body;
  assert.equal(a.ActiveMessages, '0');
  assert.equal(a.InactiveMessages, '0');
});

test('redrive through the admin API puts dead-lettered messages back, rate-limited', async () => {
  const ids = [];
  for (let i = 0; i < 3; i++) {
    ids.push((await mns.sendMessage('sdk-src', { MessageBody: `retry ${i}` })).body.MessageId);
  }
  for (let round = 0; round < 2; round++) {
    for (let i = 0; i < 3; i++) assert.ok(await receiveOrNull('sdk-src', round === 0 ? 0 : 5));
  }
  assert.equal(await receiveOrNull('sdk-src', 3), null, 'all three moved on the third receive');
  await waitFor('the DLQ holds all three', async () => (await activeOf('sdk-dlq')) === 3, 10000);

  assert.ok(server.admin, 'the admin listener address is logged');
  const t0 = Date.now();
  const r = await adminRequest(server, 'POST', '/v1/queues/sdk-dlq/redrive?rate=1');
  assert.equal(r.status, 200, r.body);
  assert.equal(JSON.parse(r.body).scheduled, 3);
  // 1 per second: the credit starts when smqd takes the request (after t0), so when the
  // first is seen back (polled, however late the machine runs the redrive's ticks) at most
  // 1 + whole seconds since t0 are back (+1 of slack) — 2 of 3 unless the machine took 2 s
  // to answer; the bound comes from the time measured, not from a sleep assumed on time.
  let early = 0;
  let seenAt = 0;
  await waitFor('the redrive starts', async () => {
    early = await activeOf('sdk-src');
    seenAt = Date.now();
    return early >= 1;
  }, 10000);
  const most = Math.min(3, Math.floor((seenAt - t0) / 1000) + 1);
  assert.ok(early <= most, `rate-limited: ${early} back ${seenAt - t0} ms after the request (at most ${most})`);
  await waitFor('all three are back', async () => (await activeOf('sdk-src')) === 3, 15000);
  const back = [];
  let m;
  while ((m = await receiveOrNull('sdk-src')) !== null) {
    back.push(m.MessageId);
    assert.equal(m.DequeueCount, '1', 'receives counted afresh');
    await mns.deleteMessage('sdk-src', m.ReceiptHandle);
  }
  assert.deepEqual(back.sort(), ids.slice().sort());
  assert.equal((await mns.getQueueAttributes('sdk-dlq')).body.ActiveMessages, '0');
});

test('disabling the policy through setQueueAttributes', async () => {
  await mns.setQueueAttributes('sdk-src', { DlqPolicy: { Enabled: false } });
  const a = (await mns.getQueueAttributes('sdk-src')).body;
  assert.equal(a.DlqEnabled, undefined);
});
