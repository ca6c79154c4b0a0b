'use strict';
// grants.test.js — per-key grants (docs/operations.md "Several teams on one smqd") through the
// official Node SDK (@alicloud/mns 1.2.0): a team's client works on its own queues, gets
// MNSAccessDeniedError on another team's for every kind of call, sees only its queues in
// listQueue, and has a batch refused whole; the SDK itself is untouched.

const fs = require('fs');
const os = require('os');
const path = require('path');
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer, writeConfig, client, mnsError } = require('./harness');

const A_SK = 'team-a-node-secret';
const B_SK = 'team-b-node-secret';

let server;
let ops;      // the operators' key: no grant section, every right
let teamA;
let teamB;

before(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'smqd-node-'));
  writeConfig(dir, [`key.team-a = ${A_SK}`, `key.team-b = ${B_SK}`]);
  fs.appendFileSync(path.join(dir, 'smqd.conf'), [
    '[grant.team-a]', 'queues = na-*', 'actions = manage, send, receive, list',
    '[grant.team-b]', 'queues = nb-*', 'actions = send, receive, list',
    '[grant.team-b.2]', 'queues = na-inbox', 'actions = send', ''
  ].join('\n'));
  server = await startServer(dir);
  ops = client(server);
  teamA = client(server, { accessKeyId: 'team-a', accessKeySecret: A_SK });
  teamB = client(server, { accessKeyId: 'team-b', accessKeySecret: B_SK });
  for (const q of ['na-1', 'na-inbox', 'nb-1', 'nb-2']) await ops.createQueue(q);
});

after(async () => {
  if (server) {
    await server.stopCleanly();
    server.removeData();
  }
});

const denied = mnsError('AccessDenied');

test('a team works on its own queues', async () => {
  const sent = await teamA.sendMessage('na-1', { MessageBody: 'mine' });
  assert.equal(sent.code, 201);
  const got = (await teamA.receiveMessage('na-1', 0)).body;
  assert.equal(got.MessageBody, 'mine');
  assert.equal((await teamA.deleteMessage('na-1', got.ReceiptHandle)).code, 204);
  assert.equal((await teamA.createQueue('na-new')).code, 201);
  assert.equal((await teamA.deleteQueue('na-new')).code, 204);
  assert.equal((await teamB.sendMessage('na-inbox', { MessageBody: 'for a' })).code, 201);
  assert.equal((await teamA.receiveMessage('na-inbox', 0)).body.MessageBody, 'for a');
});

test('every kind of call on another team\'s queue is AccessDenied', async () => {
  await ops.sendMessage('nb-1', { MessageBody: 'b only' });
  await assert.rejects(teamA.sendMessage('nb-1', { MessageBody: 'x' }), denied);
  await assert.rejects(teamA.receiveMessage('nb-1', 0), denied);
  await assert.rejects(teamA.peekMessage('nb-1'), denied);
  await assert.rejects(teamA.getQueueAttributes('nb-1'), denied);
  await assert.rejects(teamA.setQueueAttributes('nb-1', { VisibilityTimeout: 5 }), denied);
  await assert.rejects(teamA.deleteQueue('nb-1'), denied);
  await assert.rejects(teamB.createQueue('nb-3'), denied);            // no manage
  await assert.rejects(teamB.receiveMessage('na-inbox', 0), denied);  // send only
  const a = (await ops.getQueueAttributes('nb-1')).body;
  assert.equal(a.ActiveMessages, '1');
  assert.equal(a.VisibilityTimeout, '30');
  await assert.rejects(ops.getQueueAttributes('nb-3'), mnsError('QueueNotExist'));
});

test('listQueue shows only the queues a key may list', async () => {
  const urls = (r) => (r.body || []).map((q) => q.QueueURL.replace(/.*\//, ''));
  assert.deepEqual(urls(await teamA.listQueue()), ['na-1', 'na-inbox']);
  assert.deepEqual(urls(await teamB.listQueue()), ['nb-1', 'nb-2']);
  assert.deepEqual(urls(await teamB.listQueue(undefined, 10, 'na-')), []);
  assert.deepEqual(urls(await ops.listQueue()), ['na-1', 'na-inbox', 'nb-1', 'nb-2']);
});

test('a batch outside the grants is refused whole', async () => {
  await assert.rejects(teamA.batchSendMessage('nb-2',
    Array.from({ length: 16 }, (_, i) => ({ MessageBody: `m${i}` }))), denied);
  assert.equal((await ops.getQueueAttributes('nb-2')).body.ActiveMessages, '0');
  await ops.batchSendMessage('nb-2', [{ MessageBody: 'one' }, { MessageBody: 'two' }]);
  await assert.rejects(teamA.batchReceiveMessage('nb-2', 16, 0), denied);
  await assert.rejects(teamA.batchPeekMessage('nb-2', 16), denied);
  const taken = (await ops.batchReceiveMessage('nb-2', 16, 0)).body;
  await assert.rejects(teamA.batchDeleteMessage('nb-2', taken.map((m) => m.ReceiptHandle)), denied);
  assert.equal((await ops.getQueueAttributes('nb-2')).body.InactiveMessages, '2');
  assert.equal((await ops.batchDeleteMessage('nb-2', taken.map((m) => m.ReceiptHandle))).code, 204);
});
