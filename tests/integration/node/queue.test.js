'use strict';
// queue.test.js — queue operations through the official Node SDK (@alicloud/mns 1.2.0)
// against a real smqd: what a Node user sees, including how errors surface (err.name).

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer, client, mnsError } = require('./harness');

const QUEUE_KEYS = ['ActiveMessages', 'CreateTime', 'DelayMessages', 'DelaySeconds',
  'InactiveMessages', 'LastModifyTime', 'LoggingEnabled', 'MaximumMessageSize',
  'MessageRetentionPeriod', 'PollingWaitSeconds', 'QueueName', 'VisibilityTimeout'];

let server;
let mns;
const dirs = [];

before(async () => {
  server = await startServer();
  dirs.push(server.dir);
  mns = client(server);
});

after(async () => {
  if (server) await server.stopCleanly();
  for (const d of dirs) require('fs').rmSync(d, { recursive: true, force: true });
});

test('createQueue: 201 with Location, same attributes 204, different 409', async () => {
  const r = await mns.createQueue('node-create', { VisibilityTimeout: 45 });
  assert.equal(r.code, 201);
  assert.equal(r.headers.location, `${server.endpoint}/queues/node-create`);

  const again = await mns.createQueue('node-create', { VisibilityTimeout: 45 });
  assert.equal(again.code, 204);
  assert.equal(again.headers.location, `${server.endpoint}/queues/node-create`);

  await assert.rejects(mns.createQueue('node-create', { VisibilityTimeout: 46 }),
    mnsError('QueueAlreadyExist'));
});

test('createQueue: invalid attribute and invalid names', async () => {
  await assert.rejects(mns.createQueue('node-bad-attr', { VisibilityTimeout: 0 }),
    mnsError('InvalidArgument'));
  await assert.rejects(mns.createQueue('node-bad-attr', { MaximumMessageSize: 65537 }),
    mnsError('InvalidArgument'));
  await assert.rejects(mns.createQueue('bad_name'), mnsError('InvalidQueueName'));
  await assert.rejects(mns.createQueue('q'.repeat(121)), mnsError('QueueNameLengthError'));
  await assert.rejects(mns.getQueueAttributes('node-bad-attr'), mnsError('QueueNotExist'));
});

test('getQueueAttributes returns all twelve attributes', async () => {
  await mns.createQueue('node-get', { DelaySeconds: 2, LoggingEnabled: true });
  const r = await mns.getQueueAttributes('node-get');
  assert.equal(r.code, 200);
  assert.deepEqual(Object.keys(r.body).sort(), QUEUE_KEYS);
  assert.equal(r.body.QueueName, 'node-get');
  assert.equal(r.body.DelaySeconds, '2');
  assert.equal(r.body.LoggingEnabled, 'True');
  assert.equal(r.body.MaximumMessageSize, '65536');
  assert.equal(r.body.MessageRetentionPeriod, '345600');
  assert.equal(r.body.VisibilityTimeout, '30');
  assert.equal(r.body.PollingWaitSeconds, '0');
  assert.equal(r.body.ActiveMessages, '0');
  const now = Math.floor(Date.now() / 1000);
  assert.ok(Math.abs(Number(r.body.CreateTime) - now) <= 5, `CreateTime ${r.body.CreateTime} is epoch seconds`);
  await assert.rejects(mns.getQueueAttributes('node-missing'), mnsError('QueueNotExist'));
});

test('setQueueAttributes is a partial update', async () => {
  await mns.createQueue('node-set', { DelaySeconds: 3 });
  const r = await mns.setQueueAttributes('node-set', { VisibilityTimeout: 60 });
  assert.equal(r.code, 204);
  const g = await mns.getQueueAttributes('node-set');
  assert.equal(g.body.VisibilityTimeout, '60');
  assert.equal(g.body.DelaySeconds, '3');
  await assert.rejects(mns.setQueueAttributes('node-set', { PollingWaitSeconds: 31 }),
    mnsError('InvalidArgument'));
  await assert.rejects(mns.setQueueAttributes('node-missing', { VisibilityTimeout: 60 }),
    mnsError('QueueNotExist'));
});

test('listQueue with limit and prefix', async () => {
  for (const n of ['node-lst-a', 'node-lst-b', 'node-lst-c']) await mns.createQueue(n);
  // The SDK sends x-mns-prefix only together with a limit; it drops NextMarker.
  const r = await mns.listQueue(undefined, 10, 'node-lst-');
  assert.equal(r.code, 200);
  assert.deepEqual(r.body.map((q) => q.QueueURL),
    ['a', 'b', 'c'].map((s) => `${server.endpoint}/queues/node-lst-${s}`));
  const page = await mns.listQueue(undefined, 2, 'node-lst-');
  assert.equal(page.body.length, 2);
  const none = await mns.listQueue(undefined, 10, 'node-nothing-');
  assert.equal(none.code, 200);
  assert.equal(none.body, undefined); // SDK behaviour for an empty <Queues>
  await assert.rejects(mns.listQueue(undefined, 1001, 'node-'), mnsError('InvalidArgument'));
  const all = await mns.listQueue();
  assert.ok(all.body.some((q) => q.QueueURL === `${server.endpoint}/queues/node-lst-b`));
});

test('deleteQueue: 204, also for a missing queue', async () => {
  await mns.createQueue('node-del');
  const r = await mns.deleteQueue('node-del');
  assert.equal(r.code, 204);
  await assert.rejects(mns.getQueueAttributes('node-del'), mnsError('QueueNotExist'));
  const again = await mns.deleteQueue('node-del');
  assert.equal(again.code, 204);
});

test('authentication errors surface through the SDK', async () => {
  const wrongSecret = client(server, { accessKeySecret: 'wrongSecret' });
  await assert.rejects(wrongSecret.getQueueAttributes('node-create'), mnsError('SignatureDoesNotMatch'));
  const unknownKey = client(server, { accessKeyId: 'noSuchKey' });
  await assert.rejects(unknownKey.getQueueAttributes('node-create'), mnsError('InvalidAccessKeyId'));
  const second = client(server, { accessKeyId: 'secondKey', accessKeySecret: 'secondSecret' });
  const r = await second.getQueueAttributes('node-create');
  assert.equal(r.body.VisibilityTimeout, '45');
});

test('queues survive a restart on the same data dir', async () => {
  await mns.createQueue('node-persist', { VisibilityTimeout: 77, PollingWaitSeconds: 3 });
  const before = (await mns.getQueueAttributes('node-persist')).body;
  const exit = await server.stop();
  assert.deepEqual(exit, { code: 0, signal: null }, 'SIGTERM exits 0');
  server = await startServer(server.dir);
  mns = client(server);
  const afterRestart = (await mns.getQueueAttributes('node-persist')).body;
  assert.deepEqual(afterRestart, before);
  await assert.rejects(mns.getQueueAttributes('node-del'), mnsError('QueueNotExist'));
});
