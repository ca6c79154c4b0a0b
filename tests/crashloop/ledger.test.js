'use strict';
// ledger.test.js — the checker must catch what it claims to catch.  A crash loop that reports
// "0 violations" is only worth something if each invariant demonstrably fires; these cases
// feed the ledger the events a broken server would produce.  No server, no sockets.
//
//   node --test tests/crashloop/ledger.test.js

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Ledger, md5Upper } = require('./ledger.js');
const { checkLog, rngFrom, parseArgs } = require('./run.js');

const Q = 'cl-busy';

function msg(body, id, dc, handle) {
  return { MessageBody: body, MessageId: id, MessageBodyMD5: md5Upper(body), DequeueCount: String(dc),
           ReceiptHandle: handle || `${id}-${dc}` };
}

function sent(l, body, id, cycle = 0) {
  l.attempt(Q, [body]);
  l.sendAcked(cycle, Q, body, id, md5Upper(body));
}

function kinds(l) {
  return l.violations.map((v) => v.kind);
}

test('a clean history has no violation', () => {
  const l = new Ledger();
  sent(l, 'a', 'ID1');
  sent(l, 'b', 'ID2');
  l.received(0, Q, msg('a', 'ID1', 1), 10, false);
  l.deleteAttempted(['a']);
  l.deleteAcked(0, Q, msg('a', 'ID1', 1), 20);
  assert.equal(l.checkDisk(0, [{ queue: Q, body: 'b' }]), 1);
  l.received(1, Q, msg('b', 'ID2', 1), 30, true);
  l.checkFinal(1);
  assert.deepEqual(l.violations, []);
  assert.equal(l.counts.seenAfterRestart, 1);
});

test('an acknowledged send missing from disk is lost, unless its delete is in doubt', () => {
  const l = new Ledger();
  sent(l, 'a', 'ID1');
  sent(l, 'b', 'ID2');
  l.received(0, Q, msg('b', 'ID2', 1), 1, false);
  l.deleteAttempted(['b']);
  l.deleteUnanswered(['b']);
  l.checkDisk(0, []);
  assert.deepEqual(kinds(l), ['send-lost']);
  assert.match(l.violations[0].detail, /^a /);
});

test('a message whose cut-off delete took effect must never be seen again', () => {
  const l = new Ledger();
  sent(l, 'a', 'ID1');
  l.received(0, Q, msg('a', 'ID1', 1), 1, false);
  l.deleteAttempted(['a']);
  l.deleteUnanswered(['a']);
  l.checkDisk(0, []);
  assert.deepEqual(kinds(l), []);
  assert.equal(l.live.size, 0);
  l.checkDisk(1, [{ queue: Q, body: 'a' }]);
  l.received(1, Q, msg('a', 'ID1', 2), 2, false);
  assert.deepEqual(kinds(l), ['resurrected']);
  l.checkFinal(2);
  assert.deepEqual(kinds(l), ['resurrected']);
});

test('back-pressure follows the rows on disk', () => {
  const l = new Ledger();
  sent(l, 'a', 'ID1');
  sent(l, 'b', 'ID2');
  assert.equal(l.backlog(Q), 2);
  l.received(0, Q, msg('b', 'ID2', 1), 1, false);
  l.deleteAttempted(['b']);
  l.checkDisk(0, [{ queue: Q, body: 'a' }]);
  assert.equal(l.backlog(Q), 1);
});

test('an acknowledged delete found on disk or delivered again came back', () => {
  const l = new Ledger();
  sent(l, 'a', 'ID1');
  l.received(0, Q, msg('a', 'ID1', 1), 1, false);
  l.deleteAcked(0, Q, msg('a', 'ID1', 1), 5);
  l.checkDisk(0, [{ queue: Q, body: 'a' }]);
  l.received(1, Q, msg('a', 'ID1', 2), 6, false);
  assert.deepEqual(kinds(l), ['delete-came-back', 'delete-came-back']);
});

test('a receive issued before the delete was answered, of an earlier dequeue, is no violation', () => {
  const l = new Ledger();
  sent(l, 'a', 'ID1');
  l.received(0, Q, msg('a', 'ID1', 2), 1, false);
  l.deleteAcked(0, Q, msg('a', 'ID1', 2), 5);
  l.received(0, Q, msg('a', 'ID1', 1), 4, false);
  assert.deepEqual(kinds(l), []);
});

test('one id for two bodies, or a body under another id, is reported', () => {
  const l = new Ledger();
  sent(l, 'a', 'ID1');
  sent(l, 'b', 'ID1');
  l.received(0, Q, msg('a', 'ID9', 1), 1, false);
  assert.deepEqual(kinds(l), ['id-duplicated', 'id-changed']);
});

test('unknown bodies, wrong queues, bad MD5 and duplicated rows are reported', () => {
  const l = new Ledger();
  sent(l, 'a', 'ID1');
  l.received(0, Q, msg('zzz', 'ID7', 1), 1, false);
  l.received(0, 'cl-sparse', msg('a', 'ID1', 1), 1, false);
  l.received(0, Q, Object.assign(msg('a', 'ID1', 2), { MessageBodyMD5: 'X' }), 1, false);
  l.checkDisk(0, [{ queue: Q, body: 'a' }, { queue: Q, body: 'a' }, { queue: Q, body: 'q' }]);
  assert.deepEqual(kinds(l), ['unknown-message', 'wrong-queue', 'receive-md5',
    'duplicated-on-disk', 'unknown-on-disk']);
});

test('a DequeueCount delivered twice means an answered receive was rolled back', () => {
  const l = new Ledger();
  sent(l, 'a', 'ID1');
  l.received(0, Q, msg('a', 'ID1', 1), 1, false);
  l.received(1, Q, msg('a', 'ID1', 1), 2, false);
  assert.deepEqual(kinds(l), ['receive-rolled-back']);
});

test('two acknowledged deletes, or a delete with a superseded handle, are reported', () => {
  const l = new Ledger();
  sent(l, 'a', 'ID1');
  l.received(0, Q, msg('a', 'ID1', 1), 1, false);
  l.received(0, Q, msg('a', 'ID1', 2), 2, false);
  l.deleteAcked(0, Q, msg('a', 'ID1', 1), 3);
  l.deleteAcked(0, Q, msg('a', 'ID1', 2), 4);
  assert.deepEqual(kinds(l), ['stale-handle-deleted', 'deleted-twice']);
});

test('the final check wants every acknowledged send delivered, and undeleted ones by the drain', () => {
  const l = new Ledger();
  sent(l, 'never', 'ID1');
  sent(l, 'early', 'ID2');
  l.received(0, Q, msg('early', 'ID2', 1), 1, false);
  l.checkFinal(1);
  assert.deepEqual(kinds(l), ['never-delivered', 'not-drained']);
});

test('a standing loss is reported once, at the first cycle that shows it', () => {
  const l = new Ledger();
  sent(l, 'a', 'ID1');
  l.checkDisk(1, []);
  l.checkDisk(2, []);
  assert.deepEqual(l.violations.map((v) => [v.kind, v.cycle]), [['send-lost', 1]]);
});

test('sanitizer reports in the server log are violations, ERROR/WARN lines anomalies', () => {
  const l = new Ledger();
  checkLog(l, 3, [
    '2026-11-30T02:33:50.515Z INFO smqd 0.1.0 listening on http://127.0.0.1:1',
    '2026-11-30T02:33:50.600Z WARN something odd',
    '==123==ERROR: AddressSanitizer: heap-use-after-free on address 0x602',
    'src/engine.c:10:5: runtime error: signed integer overflow'
  ].join('\n'));
  assert.deepEqual(kinds(l), ['sanitizer']);
  assert.deepEqual(l.anomalies.map((a) => a.kind), ['log']);
  const u = new Ledger();
  checkLog(u, 0, 'src/x.c:1:2: runtime error: load of misaligned address\n');
  assert.deepEqual(kinds(u), ['sanitizer']);
});

test('the seed fixes the random choices; arguments are checked', () => {
  const a = rngFrom(42);
  const b = rngFrom(42);
  assert.deepEqual([a(), a(), a()], [b(), b(), b()]);
  assert.equal(parseArgs(['node', 'run.js', '--cycles', '3', '--seed', '9']).seed, 9);
  assert.throws(() => parseArgs(['node', 'run.js', '--sync', 'off']), /--sync/);
  assert.throws(() => parseArgs(['node', 'run.js', '--bogus']), /unknown/);
});
