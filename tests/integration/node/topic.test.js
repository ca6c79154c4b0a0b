'use strict';
// topic.test.js — topics through the official Node SDK (@alicloud/mns 1.2.0) against a real
// smqd (docs/protocol.md §13.4, §13.5): createTopic (201/204 with Location, 409),
// getTopicAttributes, setTopicAttributes, listTopic with paging, publishMessage delivered into a
// subscribed queue, and how errors surface.
// The SDK's deleteTopic and subscription calls are empty stubs (they send nothing), so
// deletion and subscriptions go through the SDK's own signed request method, as a Node
// user would have to; test_topics.sh covers them with curl as well.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer, client, mnsError, md5Upper } = require('./harness');

const TOPIC_KEYS = ['CreateTime', 'LastModifyTime', 'LoggingEnabled', 'MaximumMessageSize',
  'MessageCount', 'MessageRetentionPeriod', 'TopicName'];

let server;
let mns;

before(async () => {
  server = await startServer();
  mns = client(server);
});

after(async () => {
  if (server) await server.stopCleanly();
  if (server) require('fs').rmSync(server.dir, { recursive: true, force: true });
});

test('createTopic: 201 with Location, same attributes 204, different 409', async () => {
  const r = await mns.createTopic('node-topic', { MaximumMessageSize: 2048 });
  assert.equal(r.code, 201);
  assert.equal(r.headers.location, `${server.endpoint}/topics/node-topic`);
  const again = await mns.createTopic('node-topic', { MaximumMessageSize: 2048 });
  assert.equal(again.code, 204);
  assert.equal(again.headers.location, `${server.endpoint}/topics/node-topic`);
  await assert.rejects(mns.createTopic('node-topic', { MaximumMessageSize: 4096 }),
    mnsError('TopicAlreadyExist'));
  await assert.rejects(mns.createTopic('node-bad', { MaximumMessageSize: 100 }),
    mnsError('InvalidArgument'));
  await assert.rejects(mns.createTopic('bad_name'), mnsError('TopicNameInvalid'));
  await assert.rejects(mns.createTopic('t'.repeat(121)), mnsError('TopicNameLengthError'));
});

test('getTopicAttributes and setTopicAttributes', async () => {
  await mns.createTopic('node-attrs');
  let r = await mns.getTopicAttributes('node-attrs');
  assert.equal(r.code, 200);
  assert.deepEqual(Object.keys(r.body).sort(), TOPIC_KEYS);
  assert.equal(r.body.TopicName, 'node-attrs');
  assert.equal(r.body.MaximumMessageSize, '65536');
  assert.equal(r.body.MessageRetentionPeriod, '86400');
  assert.equal(r.body.MessageCount, '0');
  assert.equal(r.body.LoggingEnabled, 'False');
  const created = r.body.CreateTime;
  const set = await mns.setTopicAttributes('node-attrs', { LoggingEnabled: true, MaximumMessageSize: 1024 });
  assert.equal(set.code, 204);
  r = await mns.getTopicAttributes('node-attrs');
  assert.equal(r.body.LoggingEnabled, 'True');
  assert.equal(r.body.MaximumMessageSize, '1024');
  assert.equal(r.body.CreateTime, created);
  await assert.rejects(mns.getTopicAttributes('node-missing'), mnsError('TopicNotExist'));
  await assert.rejects(mns.setTopicAttributes('node-missing', { LoggingEnabled: true }),
    mnsError('TopicNotExist'));
});

test('listTopic: prefix, page size and marker', async () => {
  for (const n of ['node-l-a', 'node-l-b', 'node-l-c']) await mns.createTopic(n);
  const first = await mns.listTopic(undefined, 2, 'node-l-');
  assert.equal(first.code, 200);
  assert.deepEqual(first.body.map((t) => t.TopicURL),
    [`${server.endpoint}/topics/node-l-a`, `${server.endpoint}/topics/node-l-b`]);
  const rest = await mns.listTopic('node-l-c', 2, 'node-l-');
  assert.deepEqual(rest.body.map((t) => t.TopicURL), [`${server.endpoint}/topics/node-l-c`]);
});

test('delete and subscriptions through the SDK request method', async () => {
  await mns.createTopic('node-del');
  const body = '<?xml version="1.0" encoding="UTF-8"?><Subscription xmlns="http://mns.aliyuncs.com/doc/v1/">'
    + '<Endpoint>acs:mns:cn-hangzhou:1:queues/node-sink</Endpoint><NotifyContentFormat>JSON</NotifyContentFormat></Subscription>';
  const sub = await mns.put('/topics/node-del/subscriptions/s1', 'Subscription', body, ['location']);
  assert.equal(sub.code, 201);
  const got = await mns.get('/topics/node-del/subscriptions/s1', 'Subscription');
  assert.equal(got.body.NotifyContentFormat, 'JSON');
  assert.equal(got.body.Endpoint, 'acs:mns:cn-hangzhou:1:queues/node-sink');
  const del = await mns.delete('/topics/node-del', 'Topic', '');
  assert.equal(del.code, 204);
  await assert.rejects(mns.getTopicAttributes('node-del'), mnsError('TopicNotExist'));
  await assert.rejects(mns.get('/topics/node-del/subscriptions/s1', 'Subscription'),
    mnsError('TopicNotExist'));
});

test('topics survive a kill -9', async () => {
  await mns.createTopic('node-durable', { LoggingEnabled: true });
  await server.kill9();
  server = await startServer(server.dir);
  mns = client(server);
  const r = await mns.getTopicAttributes('node-durable');
  assert.equal(r.body.LoggingEnabled, 'True');
});

test('publishMessage: 201 with MessageId, delivered into a subscribed queue', async () => {
  await mns.createTopic('node-pub');
  await mns.createQueue('node-pub-q');
  const body = '<?xml version="1.0" encoding="UTF-8"?><Subscription xmlns="http://mns.aliyuncs.com/doc/v1/">'
    + '<Endpoint>acs:mns:cn-hangzhou:1:queues/node-pub-q</Endpoint><NotifyContentFormat>SIMPLIFIED</NotifyContentFormat></Subscription>';
  await mns.put('/topics/node-pub/subscriptions/s', 'Subscription', body);
  const r = await mns.publishMessage('node-pub', { MessageBody: 'hello from node', MessageTag: 'n' });
  assert.equal(r.code, 201);
  assert.match(r.body.MessageId, /^[0-9A-F]{32}$/);
  assert.equal(r.body.MessageBodyMD5, md5Upper('hello from node'));
  const got = await mns.receiveMessage('node-pub-q', 5);
  assert.equal(got.body.MessageBody, 'hello from node');
  await assert.rejects(mns.publishMessage('node-nope', { MessageBody: 'x' }), mnsError('TopicNotExist'));
});
