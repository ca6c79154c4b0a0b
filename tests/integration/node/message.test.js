'use strict';
// message.test.js — message operations through the official Node SDK (@alicloud/mns 1.2.0)
// against a real smqd, including long polling and state across a crash restart.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startServer, client, mnsError, md5Upper } = require('./harness');

const RECEIVE_KEYS = ['DequeueCount', 'EnqueueTime', 'FirstDequeueTime', 'MessageBody',
  'MessageBodyMD5', 'MessageId', 'NextVisibleTime', 'Priority', 'ReceiptHandle'];
const PEEK_KEYS = ['DequeueCount', 'EnqueueTime', 'FirstDequeueTime', 'MessageBody',
  'MessageBodyMD5', 'MessageId', 'Priority'];

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

async function counts(q) {
  const b = (await mns.getQueueAttributes(q)).body;
  return [b.ActiveMessages, b.InactiveMessages, b.DelayMessages].map(Number);
}

test('sendMessage and batchSendMessage', async () => {
  await mns.createQueue('nm-send');
  const r = await mns.sendMessage('nm-send', { MessageBody: 'hello node', Priority: 3 });
  assert.equal(r.code, 201);
  assert.match(r.body.MessageId, /^[0-9A-F]{32}$/);
  assert.equal(r.body.MessageBodyMD5, md5Upper('hello node'));

  const b = await mns.batchSendMessage('nm-send', [
    { MessageBody: 'one' }, { MessageBody: 'two', Priority: 1 }, { MessageBody: 'three', DelaySeconds: 60 }
  ]);
  assert.equal(b.code, 201);
  assert.equal(b.body.length, 3);
  assert.deepEqual(b.body.map((m) => m.MessageBodyMD5), ['one', 'two', 'three'].map(md5Upper));
  assert.deepEqual(await counts('nm-send'), [3, 0, 1]);

  await assert.rejects(mns.sendMessage('nm-send', { MessageBody: '' }), mnsError('InvalidArgument'));
  await assert.rejects(mns.sendMessage('nm-send', { MessageBody: 'x', Priority: 17 }), mnsError('InvalidArgument'));
  await assert.rejects(mns.batchSendMessage('nm-send', [{ MessageBody: 'ok' }, { MessageBody: 'bad', DelaySeconds: 604801 }]),
    mnsError('InvalidArgument'));
  // The Node SDK does not escape XML (docs/protocol.md §4): the server answers MalformedXML.
  await assert.rejects(mns.sendMessage('nm-send', { MessageBody: 'a & b' }), mnsError('MalformedXML'));
  await assert.rejects(mns.sendMessage('nm-missing', { MessageBody: 'x' }), mnsError('QueueNotExist'));
  assert.deepEqual(await counts('nm-send'), [3, 0, 1], 'refused sends stored nothing');
});

test('receiveMessage, peekMessage, deleteMessage', async () => {
  await mns.createQueue('nm-recv');
  await assert.rejects(mns.receiveMessage('nm-recv'), mnsError('MessageNotExist'));
  await assert.rejects(mns.peekMessage('nm-recv'), mnsError('MessageNotExist'));
  const sent = await mns.sendMessage('nm-recv', { MessageBody: 'I am 测试字符串.' });
  assert.equal(sent.body.MessageBodyMD5, '9D75198CAA17528AB23790C1861987AF');

  const p = await mns.peekMessage('nm-recv');
  assert.equal(p.code, 200);
  assert.deepEqual(Object.keys(p.body).sort(), PEEK_KEYS);
  assert.equal(p.body.DequeueCount, '0');

  const t0 = Date.now();
  const r = await mns.receiveMessage('nm-recv');
  assert.equal(r.code, 200);
  assert.deepEqual(Object.keys(r.body).sort(), RECEIVE_KEYS);
  assert.equal(r.body.MessageId, sent.body.MessageId);
  assert.equal(r.body.MessageBody, 'I am 测试字符串.');
  assert.equal(r.body.DequeueCount, '1');
  assert.equal(r.body.Priority, '8');
  assert.match(r.body.ReceiptHandle, /^[A-Za-z0-9_-]+$/);
  const nvt = Number(r.body.NextVisibleTime);
  assert.ok(nvt >= t0 + 29000 && nvt <= Date.now() + 31000, `NextVisibleTime ${nvt} = now + 30 s`);
  assert.deepEqual(await counts('nm-recv'), [0, 1, 0]);

  const d = await mns.deleteMessage('nm-recv', r.body.ReceiptHandle);
  assert.equal(d.code, 204);
  await assert.rejects(mns.deleteMessage('nm-recv', r.body.ReceiptHandle), mnsError('MessageNotExist'));
  await assert.rejects(mns.deleteMessage('nm-recv', 'garbage'), mnsError('ReceiptHandleError'));
  await assert.rejects(mns.deleteMessage('nm-missing', r.body.ReceiptHandle), mnsError('QueueNotExist'));
  assert.deepEqual(await counts('nm-recv'), [0, 0, 0]);
});

test('batchReceiveMessage, batchPeekMessage, batchDeleteMessage', async () => {
  await mns.createQueue('nm-batch');
  await mns.batchSendMessage('nm-batch', [1, 2, 3, 4].map((i) => ({ MessageBody: `b${i}` })));
  const peek = await mns.batchPeekMessage('nm-batch', 16);
  assert.equal(peek.code, 200);
  assert.deepEqual(peek.body.map((m) => m.MessageBody), ['b1', 'b2', 'b3', 'b4']);
  assert.deepEqual(Object.keys(peek.body[0]).sort(), PEEK_KEYS);

  const one = await mns.batchReceiveMessage('nm-batch', 1);
  assert.equal(one.body.length, 1, 'numOfMessages=1 still returns a list');
  const rest = await mns.batchReceiveMessage('nm-batch', 16, 3);
  assert.deepEqual(rest.body.map((m) => m.MessageBody), ['b2', 'b3', 'b4']);
  assert.deepEqual(Object.keys(rest.body[0]).sort(), RECEIVE_KEYS);
  await assert.rejects(mns.batchReceiveMessage('nm-batch', 17), mnsError('InvalidArgument'));

  const h1 = one.body[0].ReceiptHandle;
  const [h2, h3, h4] = rest.body.map((m) => m.ReceiptHandle);
  await mns.deleteMessage('nm-batch', h2);
  // Partial failure: 404 with one item per failed handle; the SDK does not throw.
  const partial = await mns.batchDeleteMessage('nm-batch', [h1, h2, 'garbage']);
  assert.equal(partial.code, 404);
  assert.equal(partial.body.length, 2);
  const byHandle = Object.fromEntries(partial.body.map((e) => [e.ReceiptHandle, e]));
  assert.equal(byHandle[h2].ErrorCode, 'MessageNotExist');
  assert.equal(byHandle.garbage.ErrorCode, 'ReceiptHandleError');
  assert.ok(byHandle[h2].ErrorMessage.length > 0);

  const ok = await mns.batchDeleteMessage('nm-batch', [h3, h4]);
  assert.equal(ok.code, 204);
  assert.equal(ok.body, undefined);
  assert.deepEqual(await counts('nm-batch'), [0, 0, 0], 'h1 was deleted by the partial batch');
});

test('changeMessageVisibility', async () => {
  await mns.createQueue('nm-vis');
  await mns.sendMessage('nm-vis', { MessageBody: 'vis' });
  const r = await mns.receiveMessage('nm-vis');
  const t0 = Date.now();
  const c = await mns.changeMessageVisibility('nm-vis', r.body.ReceiptHandle, 10);
  assert.equal(c.code, 200);
  assert.notEqual(c.body.ReceiptHandle, r.body.ReceiptHandle);
  const nvt = Number(c.body.NextVisibleTime);
  assert.ok(nvt >= t0 + 9000 && nvt <= Date.now() + 11000, `NextVisibleTime ${nvt} = now + 10 s`);
  await assert.rejects(mns.changeMessageVisibility('nm-vis', r.body.ReceiptHandle, 10), mnsError('MessageNotExist'));
  await assert.rejects(mns.changeMessageVisibility('nm-vis', c.body.ReceiptHandle, 43201), mnsError('InvalidArgument'));
  await assert.rejects(mns.changeMessageVisibility('nm-vis', 'garbage', 10), mnsError('ReceiptHandleError'));

  const now = await mns.changeMessageVisibility('nm-vis', c.body.ReceiptHandle, 0);
  assert.equal(now.code, 200);
  const again = await mns.receiveMessage('nm-vis');
  assert.equal(again.body.DequeueCount, '2');
  await mns.deleteMessage('nm-vis', again.body.ReceiptHandle);
});

test('priority order: lower value first, oldest first', async () => {
  await mns.createQueue('nm-prio');
  for (const [body, Priority] of [['m1', 8], ['m2', 1], ['m3', 16], ['m4', 1]]) {
    await mns.sendMessage('nm-prio', { MessageBody: body, Priority });
  }
  const got = [];
  for (let i = 0; i < 4; i++) got.push((await mns.receiveMessage('nm-prio')).body.MessageBody);
  assert.deepEqual(got, ['m2', 'm4', 'm1', 'm3']);
});

// requestLine(pattern) — the request line smqd logged for a request matching pattern (it is
// written after the answer, so it is waited for). Its timestamp and latency_ms are smqd's
// own times: what the SDK and a loaded machine add around a request does not count.
async function requestLine(pattern) {
  const deadline = Date.now() + 10000;
  for (;;) {
    const line = server.log().split('\n').find((l) => / INFO request id=/.test(l) && pattern.test(l));
    if (line) {
      return {
        at: Date.parse(line.split(' ')[0]),
        latency: Number(/latency_ms=([0-9.]+)/.exec(line)[1]),
      };
    }
    assert.ok(Date.now() < deadline, `no request line matching ${pattern} in the log`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test('long poll wakes up when a message arrives', { timeout: 60000 }, async () => {
  await mns.createQueue('nm-lp');
  // The poll waits 20 s, so one not woken by the send would answer many seconds after it.
  const pending = mns.receiveMessage('nm-lp', 20);
  await new Promise((resolve) => setTimeout(resolve, 300));
  await mns.sendMessage('nm-lp', { MessageBody: 'wake' });
  const r = await pending;
  assert.equal(r.body.MessageBody, 'wake');
  const sent = await requestLine(/action=SendMessage queue=nm-lp status=201 /);
  const woke = await requestLine(/action=ReceiveMessage queue=nm-lp status=200 /);
  const after = woke.at - sent.at;   // both logged after their answers: may be slightly < 0
  assert.ok(after >= -1000 && after <= 3000, `woke ${after} ms after the send was answered`);

  await assert.rejects(mns.receiveMessage('nm-lp', 2), mnsError('MessageNotExist'));
  const waited = (await requestLine(/action=ReceiveMessage queue=nm-lp status=404 /)).latency;
  // Under a whole extra second: a deadline rounded up to the next second is still caught.
  assert.ok(waited >= 1900 && waited <= 2900, `empty long poll answered after ${waited} ms (server side)`);
});

test('state survives SIGKILL and restart on the same data dir', { timeout: 30000 }, async () => {
  await mns.createQueue('nm-crash');
  await mns.sendMessage('nm-crash', { MessageBody: 'inactive' });
  await mns.sendMessage('nm-crash', { MessageBody: 'deleted' });
  await mns.sendMessage('nm-crash', { MessageBody: 'delayed', DelaySeconds: 60 });
  await mns.sendMessage('nm-crash', { MessageBody: 'active' });
  const inactive = await mns.receiveMessage('nm-crash');
  assert.equal(inactive.body.MessageBody, 'inactive');
  const del = await mns.receiveMessage('nm-crash');
  await mns.deleteMessage('nm-crash', del.body.ReceiptHandle);

  await server.kill9();
  server = await startServer(server.dir);
  mns = client(server);

  assert.deepEqual(await counts('nm-crash'), [1, 1, 1]);
  const peek = await mns.batchPeekMessage('nm-crash', 16);
  assert.deepEqual(peek.body.map((m) => m.MessageBody), ['active']);
  const d = await mns.deleteMessage('nm-crash', inactive.body.ReceiptHandle);
  assert.equal(d.code, 204, 'handle issued before the crash still works');
  await assert.rejects(mns.deleteMessage('nm-crash', del.body.ReceiptHandle), mnsError('MessageNotExist'));
  assert.deepEqual(await counts('nm-crash'), [1, 0, 1]);
});
