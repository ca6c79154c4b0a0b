'use strict';
// push_endpoint.test.js — the crash loop's push endpoint must accept what smqd signs and reject
// what it did not (docs/protocol.md §13.11): each case sends the endpoint a push signed here, as
// §13.10 and §13.11 say, with a key whose certificate a stand-in for smqd's listener serves.
// Loopback only (127.0.0.1), every server closed at the end.  Needs the openssl command (the
// certificates); skipped without it.
//
//   node --test tests/crashloop/push_endpoint.test.js

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const childProcess = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const { Ledger } = require('./ledger.js');
const pushEndpoint = require('./push_endpoint.js');
const { stringToSign, bodyMd5 } = require('../../docs/examples/push-verifier.js');

const HAVE_OPENSSL = childProcess.spawnSync('openssl', ['version']).status === 0;
let tmp;
let keyA;          // {key, pem} of the "smqd" of this test
let keyB;          // another key pair
const certServers = [];

// A self-signed certificate and its private key, made by openssl.
function keyPair(name) {
  const k = path.join(tmp, `${name}.key`);
  const c = path.join(tmp, `${name}.pem`);
  const r = childProcess.spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', k,
    '-out', c, '-subj', `/CN=${name}`, '-days', '1'], { stdio: 'ignore' });
  assert.equal(r.status, 0, 'openssl req');
  return { key: crypto.createPrivateKey(fs.readFileSync(k)), pem: fs.readFileSync(c, 'utf8') };
}

// A stand-in for smqd's listener: serves pem at /smqd/signing-cert.pem; -> its base URL.
function certServer(pem) {
  const s = http.createServer((req, res) => {
    if (req.url === '/smqd/signing-cert.pem') res.writeHead(200, { 'Content-Type': 'application/x-pem-file' }).end(pem);
    else res.writeHead(404).end();
  });
  certServers.push(s);
  return new Promise((resolve) => s.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${s.address().port}`)));
}

before(() => {
  if (!HAVE_OPENSSL) return;
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'smqd-push-endpoint-'));
  keyA = keyPair('a');
  keyB = keyPair('b');
});

after(() => {
  for (const s of certServers) s.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

// A book that records the pushes and answers what it is told.
function fakeBook(statuses) {
  return {
    calls: [],
    pushed(cycle, name, h, text, failFirst) {
      this.calls.push({ cycle, name, text, failFirst, id: h.get('x-mns-message-id') });
      return statuses.length ? statuses.shift() : 204;
    }
  };
}

async function endpoint(book, ledger) {
  return pushEndpoint.start({ book, ledger, cycleOf: () => 3, failFirst: (name) => name === 'h-simple',
                              trustWaitMs: 300 });
}

// POSTs a SIMPLIFIED push of body to ep's path, signed with key under certUrl; `tamper` may
// change the headers or the body after signing.  -> the status.
function sendPush(ep, p, body, key, certUrl, tamper = {}) {
  const h = new Map([
    ['content-md5', bodyMd5(Buffer.from(body))], ['content-type', 'text/plain;charset=utf-8'],
    ['date', new Date().toUTCString()], ['x-mns-message-id', 'P1'], ['x-mns-request-id', '5F2A1C9B04D70000000000A3'],
    ['x-mns-signing-cert-url', Buffer.from(`${certUrl}/smqd/signing-cert.pem`).toString('base64')],
    ['x-mns-subscription-name', p.slice(1).split('?')[0]], ['x-mns-topic-name', 'cl-topic'], ['x-mns-version', '2015-06-06']
  ]);
  h.set('authorization', crypto.sign('RSA-SHA1', Buffer.from(stringToSign('POST', p, h)), key).toString('base64'));
  for (const [k, v] of Object.entries(tamper.headers || {})) h.set(k, v);
  const sent = tamper.body !== undefined ? tamper.body : body;
  return new Promise((resolve, reject) => {
    const req = http.request(ep.url(p), { method: 'POST', headers: Object.fromEntries(h) }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end(sent);
  });
}

test('a push signed with the trusted certificate\'s key goes to the ledger, answered as it says', { skip: !HAVE_OPENSSL }, async () => {
  const ledger = new Ledger();
  const book = fakeBook([500, 204]);
  const ep = await endpoint(book, ledger);
  try {
    const smqd = await certServer(keyA.pem);
    assert.equal(await ep.trust(smqd), true);
    assert.equal(await sendPush(ep, '/h-simple?x=1', 'c0-t0-1', keyA.key, smqd), 500);
    assert.equal(await sendPush(ep, '/h-xml', 'c0-t0-2', keyA.key, smqd), 204);
    assert.deepEqual(book.calls.map((c) => [c.cycle, c.name, c.text, c.failFirst, c.id]),
      [[3, 'h-simple', 'c0-t0-1', true, 'P1'], [3, 'h-xml', 'c0-t0-2', false, 'P1']]);
    assert.deepEqual(ledger.violations, []);
  } finally {
    await ep.close();
  }
});

test('a push that comes before its server is trusted waits for it', { skip: !HAVE_OPENSSL }, async () => {
  const ledger = new Ledger();
  const book = fakeBook([204]);
  const ep = await endpoint(book, ledger);
  try {
    const smqd = await certServer(keyA.pem);
    const status = sendPush(ep, '/h-xml', 'early', keyA.key, smqd);
    await ep.trust(smqd);
    assert.equal(await status, 204);
    assert.deepEqual(ledger.violations, []);
  } finally {
    await ep.close();
  }
});

test('a wrong signature, a changed body or header, an untrusted certificate URL: 403 and a violation', { skip: !HAVE_OPENSSL }, async () => {
  const ledger = new Ledger();
  const book = fakeBook([]);
  const ep = await endpoint(book, ledger);
  try {
    const smqd = await certServer(keyA.pem);
    const stranger = await certServer(keyB.pem);
    await ep.trust(smqd);
    assert.equal(await sendPush(ep, '/h-xml', 'x', keyB.key, smqd), 403);
    assert.equal(await sendPush(ep, '/h-xml', 'x', keyA.key, smqd, { body: 'y' }), 403);
    assert.equal(await sendPush(ep, '/h-xml', 'x', keyA.key, smqd, { headers: { 'x-mns-message-id': 'P2' } }), 403);
    assert.equal(await sendPush(ep, '/h-xml', 'x', keyB.key, stranger), 403);
    assert.equal(book.calls.length, 0);
    assert.deepEqual(ledger.violations.map((v) => v.kind), Array(4).fill('push-unverified'));
    const why = ledger.violations.map((v) => v.detail.replace(/^POST \/h-xml: /, ''));
    assert.deepEqual(why.slice(0, 3), ['signature does not verify', 'body does not match content-md5',
      'signature does not verify']);
    assert.match(why[3], /^certificate URL "http:\/\/127\.0\.0\.1:\d+\/smqd\/signing-cert\.pem" is not one of this run's servers$/);
  } finally {
    await ep.close();
  }
});

test('a restarted server that serves another key is told apart', { skip: !HAVE_OPENSSL }, async () => {
  const ep = await endpoint(fakeBook([]), new Ledger());
  try {
    assert.equal(await ep.trust(await certServer(keyA.pem)), true);
    assert.equal(await ep.trust(await certServer(keyA.pem)), true);
    assert.equal(await ep.trust(await certServer(keyB.pem)), false);
  } finally {
    await ep.close();
  }
});
