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

async function receiveOrNull(q) {
  try {
    return (await mns.receiveMessage(q, 0)).body;
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
  await sleep(1100);
  const second = await receiveOrNull('sdk-src');
  assert.equal(second.MessageId, sent.MessageId);
  assert.equal(second.DequeueCount, '2');
  await sleep(1100);
  assert.equal(await receiveOrNull('sdk-src'), null, 'the third receive finds it gone');

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
    for (let i = 0; i < 3; i++) assert.ok(await receiveOrNull('sdk-src'));
    await sleep(1100);
  }
  assert.equal(await receiveOrNull('sdk-src'), null, 'all three moved on the third receive');
  assert.equal((await mns.getQueueAttributes('sdk-dlq')).body.ActiveMessages, '3');

  assert.ok(server.admin, 'the admin listener address is logged');
  const r = await adminRequest(server, 'POST', '/v1/queues/sdk-dlq/redrive?rate=2');
  assert.equal(r.status, 200, r.body);
  assert.equal(JSON.parse(r.body).scheduled, 3);
  // 2 per second: after about half a second at most two are back, after 2 s all three.
  await sleep(600);
  const early = Number((await mns.getQueueAttributes('sdk-src')).body.ActiveMessages);
  assert.ok(early >= 1 && early <= 2, `rate-limited: ${early} back after 0.6 s`);
  await sleep(1600);
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
