'use strict';
// publish_ledger.test.js — the publish checker must catch what it claims to catch: each case
// feeds the PublishLedger the events a broken fan-out would produce.  No server, no sockets.
//
//   node --test tests/crashloop/publish_ledger.test.js

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Ledger, md5Upper } = require('./ledger.js');
const { PublishLedger, decode } = require('./publish_ledger.js');

const T = 'cl-topic';
const SUBS = [
  { name: 's-simple', queue: 'q-simple', format: 'SIMPLIFIED' },
  { name: 's-json', queue: 'q-json', format: 'JSON' },
  { name: 's-xml', queue: 'q-xml', format: 'XML' }
];
const [SIMPLE, JSN, XML] = SUBS;

function book() {
  const l = new Ledger();
  return { l, b: new PublishLedger(T, SUBS, l) };
}

function published(b, body, id, tag = '', cycle = 0) {
  b.attempt(body, tag);
  b.publishAcked(cycle, body, id, md5Upper(body));
}

// The queue message body a subscription gets for a publish (docs/protocol.md §13.9).
function notification(sub, body, id, tag = '', over = {}) {
  const f = Object.assign({ TopicOwner: '1000000000000000', TopicName: T, Subscriber: '1000000000000000',
                            SubscriptionName: sub.name, MessageId: id, Message: body, MessageMD5: md5Upper(body) },
                          tag ? { MessageTag: tag } : {}, { PublishTime: 1704164645000 }, over);
  if (sub.format === 'SIMPLIFIED') return body;
  if (sub.format === 'JSON') return JSON.stringify(f);
  const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  return '<?xml version="1.0" encoding="UTF-8"?><Notification xmlns="http://mns.aliyuncs.com/doc/v1/">' +
    Object.entries(f).map(([k, v]) => `<${k}>${esc(v)}</${k}>`).join('') + '</Notification>';
}

function copy(sub, body, pubId, qid, dc, tag = '', over = {}) {
  const text = notification(sub, body, pubId, tag, over);
  return { MessageBody: text, MessageId: qid, MessageBodyMD5: md5Upper(text), DequeueCount: String(dc),
           ReceiptHandle: `${qid}-${dc}` };
}

function kinds(l) {
  return l.violations.map((v) => v.kind);
}

// Delivers one copy of body to every subscription and deletes it.
function deliverAll(b, cycle, body, pubId, tag = '') {
  SUBS.forEach((s, i) => {
    const m = copy(s, body, pubId, `${pubId}-${i}`, 1, tag);
    b.received(cycle, s.queue, m, 1, false);
    b.deleteAttempted([m]);
    b.deleteAcked(cycle, m, 2);
  });
}

test('the three formats decode to the published body; XML is unescaped once more', () => {
  assert.equal(decode('SIMPLIFIED', 'a<b').body, 'a<b');
  assert.equal(decode('JSON', notification(JSN, 'x"y', 'P1')).body, 'x"y');
  const x = decode('XML', notification(XML, 'a<&>b', 'P1', 'red'));
  assert.deepEqual([x.body, x.id, x.tag, x.sub, x.topic], ['a<&>b', 'P1', 'red', 's-xml', T]);
  assert.equal(decode('XML', '<Notification><Message>a</Message></Notification>'), null);
  assert.equal(decode('JSON', '{"Message":'), null);
});

test('a clean history has no violation, and its publishes leave the open set', () => {
  const { l, b } = book();
  published(b, 'a', 'P1', 'red');
  published(b, 'b', 'P2');
  assert.equal(b.backlog(), 6);
  deliverAll(b, 0, 'a', 'P1', 'red');
  assert.equal(b.checkDisk(0, [{ queue: 'q-json', body: notification(JSN, 'b', 'P2') }],
                          [{ sub: 's-simple', body: 'b' }, { sub: 's-xml', body: 'b' }]), 3);
  deliverAll(b, 1, 'b', 'P2');
  b.checkDisk(1, [], []);
  b.checkFinal(1);
  assert.deepEqual(l.violations, []);
  assert.equal(b.open.size, 0);
  assert.equal(b.counts.seenAfterRestart, 3);
});

test('an acknowledged publish neither pending, queued nor delivered is lost for that subscription', () => {
  const { l, b } = book();
  published(b, 'a', 'P1');
  b.received(0, SIMPLE.queue, copy(SIMPLE, 'a', 'P1', 'Q1', 1), 1, false);
  b.deleteAcked(0, copy(SIMPLE, 'a', 'P1', 'Q1', 1), 2);
  b.checkDisk(0, [{ queue: 'q-json', body: notification(JSN, 'a', 'P1') }], []);
  b.checkDisk(1, [{ queue: 'q-json', body: notification(JSN, 'a', 'P1') }], []);
  assert.deepEqual(kinds(l), ['publish-lost']);
  assert.match(l.violations[0].detail, /s-xml/);
  b.checkFinal(2);
  assert.deepEqual(kinds(l), ['publish-lost', 'publish-never-delivered', 'publish-never-delivered']);
});

test('a second copy in one subscription is counted, not a violation', () => {
  const { l, b } = book();
  published(b, 'a', 'P1');
  b.received(0, SIMPLE.queue, copy(SIMPLE, 'a', 'P1', 'Q1', 1), 1, false);
  b.received(0, SIMPLE.queue, copy(SIMPLE, 'a', 'P1', 'Q2', 1), 1, false);
  b.received(0, SIMPLE.queue, copy(SIMPLE, 'a', 'P1', 'Q1', 2), 1, false);
  b.checkDisk(0, [], [{ sub: 's-simple', body: 'a' }, { sub: 's-json', body: 'a' }, { sub: 's-xml', body: 'a' }]);
  assert.deepEqual(kinds(l), []);
  assert.deepEqual([b.counts.duplicates, b.counts.redeliveries, b.counts.doubledOnDisk], [1, 1, 0]);
  b.checkDisk(1, [{ queue: 'q-simple', body: 'a' }], [{ sub: 's-simple', body: 'a' }]);
  assert.equal(b.counts.doubledOnDisk, 1);
});

test('a notification that misstates its publish is reported', () => {
  const { l, b } = book();
  published(b, 'a', 'P1', 'red');
  b.received(0, JSN.queue, copy(JSN, 'a', 'P1', 'Q1', 1, 'blue'), 1, false);
  b.received(0, XML.queue, copy(XML, 'a', 'P9', 'Q2', 1, 'red'), 1, false);
  b.received(0, XML.queue, copy(XML, 'a', 'P1', 'Q3', 1, 'red', { SubscriptionName: 's-json', MessageMD5: 'X' }), 1, false);
  assert.deepEqual(kinds(l), ['notification', 'id-changed', 'notification']);
});

test('unknown and malformed notifications, on delivery and on disk, are reported', () => {
  const { l, b } = book();
  published(b, 'a', 'P1');
  b.received(0, SIMPLE.queue, copy(SIMPLE, 'zzz', 'P7', 'Q1', 1), 1, false);
  b.received(0, JSN.queue, copy(SIMPLE, 'not json', 'P7', 'Q2', 1), 1, false);
  b.checkDisk(0, [{ queue: 'q-xml', body: '<x/>' }, { queue: 'q-simple', body: 'yyy' }],
              [{ sub: 's-json', body: '' }, { sub: 's-xml', body: 'a' }, { sub: 's-simple', body: 'a' }]);
  assert.deepEqual(kinds(l), ['unknown-notification', 'bad-notification', 'bad-notification', 'unknown-on-disk',
    'torn-row', 'publish-lost']);
});

test('a received copy that was not deleted must stay on disk; a cut-off delete may take it', () => {
  const { l, b } = book();
  published(b, 'a', 'P1');
  const kept = copy(SIMPLE, 'a', 'P1', 'Q1', 1);
  const cut = copy(JSN, 'a', 'P1', 'Q2', 1);
  b.received(0, SIMPLE.queue, kept, 1, false);
  b.received(0, JSN.queue, cut, 1, false);
  b.deleteAttempted([cut]);
  b.checkDisk(0, [], [{ sub: 's-xml', body: 'a' }]);
  assert.deepEqual(kinds(l), ['copy-lost']);
  b.received(1, JSN.queue, copy(JSN, 'a', 'P1', 'Q2', 2), 5, false);
  assert.deepEqual(kinds(l), ['copy-lost', 'resurrected']);
});

test('a copy comes back after its acknowledged delete, or repeats a DequeueCount', () => {
  const { l, b } = book();
  published(b, 'a', 'P1');
  const m = copy(SIMPLE, 'a', 'P1', 'Q1', 1);
  b.received(0, SIMPLE.queue, m, 1, false);
  b.received(0, SIMPLE.queue, copy(SIMPLE, 'a', 'P1', 'Q1', 1), 2, false);
  b.deleteAcked(0, copy(SIMPLE, 'a', 'P1', 'Q1', 2), 3);
  b.received(1, SIMPLE.queue, copy(SIMPLE, 'a', 'P1', 'Q1', 3), 4, false);
  b.deleteAcked(1, copy(SIMPLE, 'a', 'P1', 'Q1', 3), 5);
  assert.deepEqual(kinds(l), ['receive-rolled-back', 'delete-came-back', 'deleted-twice']);
});

test('one id for a publish and a copy, or for two copies, is reported', () => {
  const { l, b } = book();
  published(b, 'a', 'P1');
  published(b, 'b', 'P2');
  b.received(0, SIMPLE.queue, copy(SIMPLE, 'a', 'P1', 'P2', 1), 1, false);
  b.received(0, SIMPLE.queue, copy(SIMPLE, 'b', 'P2', 'Q5', 1), 1, false);
  b.received(0, JSN.queue, copy(JSN, 'b', 'P2', 'Q5', 1), 1, false);
  assert.deepEqual(kinds(l), ['id-duplicated', 'id-duplicated']);
});

// ---- HTTP subscriptions: pushes (docs/protocol.md §13.10, §13.12) ----

const HXML = { name: 'h-xml', format: 'XML', http: true, okStatus: 201 };
const HSIMPLE = { name: 'h-simple', format: 'SIMPLIFIED', http: true, okStatus: 204 };
const HSUBS = [SIMPLE, HXML, HSIMPLE];

function pushBook() {
  const l = new Ledger();
  return { l, b: new PublishLedger(T, HSUBS, l) };
}

// The headers and body of one push of body (published as pubId) to sub, as §13.10 makes them.
function push(sub, body, pubId, tag = '', over = {}) {
  const h = new Map([['x-mns-topic-name', T], ['x-mns-subscription-name', sub.name]]);
  if (sub.format === 'SIMPLIFIED') {
    h.set('x-mns-message-id', pubId);
    if (tag) h.set('x-mns-message-tag', tag);
  }
  for (const [k, v] of Object.entries(over)) h.set(k, v);
  return { h, text: notification(sub, body, pubId, tag) };
}

function pushTo(b, cycle, sub, body, pubId, failFirst = false, tag = '', over = {}) {
  const { h, text } = push(sub, body, pubId, tag, over);
  return b.pushed(cycle, sub.name, h, text, failFirst);
}

test('pushes answered 2xx deliver a publish to HTTP subscriptions; a clean history has no violation', () => {
  const { l, b } = pushBook();
  published(b, 'a', 'P1', 'red');
  assert.equal(b.backlog(), 3);
  assert.equal(pushTo(b, 0, HXML, 'a', 'P1', false, 'red'), 201);
  assert.equal(pushTo(b, 0, HSIMPLE, 'a', 'P1', false, 'red'), 204);
  assert.equal(b.backlog(), 1);
  b.checkDisk(0, [{ queue: 'q-simple', body: 'a' }], []);
  b.received(1, SIMPLE.queue, copy(SIMPLE, 'a', 'P1', 'Q1', 1), 1, false);
  b.deleteAcked(1, copy(SIMPLE, 'a', 'P1', 'Q1', 1), 2);
  b.checkDisk(1, [], []);
  b.checkFinal(1);
  assert.deepEqual(l.violations, []);
  assert.equal(b.open.size, 0);
  assert.deepEqual([b.counts.pushes, b.counts.pushDuplicates, b.counts.pushRetries], [2, 0, 0]);
});

test('a publish neither pending for an HTTP subscription nor pushed with a 2xx is lost', () => {
  const { l, b } = pushBook();
  published(b, 'a', 'P1');
  published(b, 'b', 'P2');
  pushTo(b, 0, HXML, 'a', 'P1');
  // a: h-simple's notification is gone, never pushed; b: h-xml's push was only answered 500.
  assert.equal(pushTo(b, 0, HXML, 'b', 'P2', true), 500);
  b.checkDisk(0, [{ queue: 'q-simple', body: 'a' }, { queue: 'q-simple', body: 'b' }], [{ sub: 'h-simple', body: 'b' }]);
  assert.deepEqual(kinds(l), ['publish-lost', 'publish-lost']);
  assert.match(l.violations[0].detail, /^a .*h-simple, nor was a push of it answered 2xx/);
  assert.match(l.violations[1].detail, /^b .*h-xml/);
  b.checkFinal(1);
  // s-simple never got either; h-simple never got a or b (still pending), h-xml never got b.
  assert.deepEqual(kinds(l).slice(2), Array(5).fill('publish-never-delivered'));
  assert.match(l.violations[3].detail, /never reached h-simple's endpoint/);
});

test('a push failed on purpose is retried; a push after a 2xx is a duplicate, counted, not a violation', () => {
  const { l, b } = pushBook();
  published(b, 'a', 'P1');
  // The first push is answered 500 whatever failFirst says later; the retry gets its 2xx.
  assert.equal(pushTo(b, 0, HSIMPLE, 'a', 'P1', true), 500);
  assert.equal(b.backlog(), 3);
  b.checkDisk(0, [], [{ sub: 'h-simple', body: 'a' }, { sub: 'h-xml', body: 'a' }, { sub: 's-simple', body: 'a' }]);
  assert.equal(pushTo(b, 1, HSIMPLE, 'a', 'P1', true), 204);
  assert.equal(b.counts.seenAfterRestart, 1);
  // Answered 2xx, but smqd was killed before it recorded the delivery: pending, pushed again.
  pushTo(b, 1, HXML, 'a', 'P1');
  b.checkDisk(1, [], [{ sub: 'h-xml', body: 'a' }, { sub: 's-simple', body: 'a' }]);
  pushTo(b, 2, HXML, 'a', 'P1');
  assert.deepEqual(kinds(l), []);
  assert.deepEqual([b.counts.pushes, b.counts.pushesFailedOnPurpose, b.counts.pushRetries, b.counts.pushDuplicates],
    [4, 1, 1, 1]);
});

test('a push that misstates its publish or its subscription is reported', () => {
  const { l, b } = pushBook();
  published(b, 'a', 'P1', 'red');
  pushTo(b, 0, HSIMPLE, 'a', 'P1', false, 'blue');
  pushTo(b, 0, HSIMPLE, 'a', 'P9', false, 'red');
  pushTo(b, 0, HSIMPLE, 'a', 'P1', false, 'red', { 'x-mns-subscription-name': 'h-xml', 'x-mns-topic-name': 'other' });
  const { h } = push(HSIMPLE, 'a', 'P1', 'red');
  h.delete('x-mns-message-id');
  b.pushed(0, HSIMPLE.name, h, 'a', false);
  pushTo(b, 0, HXML, 'a', 'P1', false, 'blue');
  assert.deepEqual(kinds(l), ['push-headers', 'id-changed', 'push-headers', 'push-headers', 'notification']);
  assert.match(l.violations[2].detail, /x-mns-topic-name other, x-mns-subscription-name h-xml/);
});

test('pushes of what was never published, or for no HTTP subscription, are reported', () => {
  const { l, b } = pushBook();
  published(b, 'a', 'P1');
  pushTo(b, 0, HSIMPLE, 'zzz', 'P7');
  assert.equal(b.pushed(0, HXML.name, new Map(), '<not a notification/>', false), 204);
  pushTo(b, 0, SIMPLE, 'a', 'P1');
  b.pushed(0, 'nobody', new Map(), 'a', false);
  assert.deepEqual(kinds(l), ['unknown-push', 'bad-push', 'unknown-push', 'unknown-push']);
  assert.equal(b.backlog(), 3);
});
