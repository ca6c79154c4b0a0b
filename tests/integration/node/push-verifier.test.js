'use strict';
// push-verifier.test.js — docs/examples/push-verifier.js without smqd: the verifier is started
// as operators would start it, a tiny HTTP server on 127.0.0.1 serves the test certificate, and
// hand-made pushes signed as docs/protocol.md §13.11 says (Node's crypto.sign, under the test key
// of tests/unit/signing_test_key.h) are sent to it: a valid one (204), tampered ones (403), one
// naming a certificate URL not on the allow-list (403), and --fail-first's 500s per message id.
// Every process is bound to 127.0.0.1, killed by PID in after(), and each wait is bounded.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');

const VERIFIER = path.join(__dirname, '../../../docs/examples/push-verifier.js');
const KEYS_FROM = path.join(__dirname, '../../unit/signing_test_key.h');
const WAIT_MS = 10000;

// A `static const char NAME[] = "..." "...";` PEM literal of the C test, as text.
function cLiteral(src, name) {
  const m = new RegExp(`static const char ${name}\\[\\] =((?:\\s*"[^"]*")+);`).exec(src);
  if (!m) throw new Error(`no ${name} in ${KEYS_FROM}`);
  return [...m[1].matchAll(/"([^"]*)"/g)].map((q) => q[1].replace(/\\n/g, '\n')).join('');
}

const cSource = fs.readFileSync(KEYS_FROM, 'utf8');
const KEY = cLiteral(cSource, 'KEY');
const CERT = cLiteral(cSource, 'CERT');

let dir;
let certServer;
let certFetches = 0;
let certBase;
const verifiers = [];

function listen(server) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server.address().port));
  });
}

// Starts the verifier with args (and env additions); resolves with its port once it printed
// its listening line.
function startVerifier(args, env = {}) {
  const child = spawn(process.execPath, [VERIFIER, '--host', '127.0.0.1', '--port', '0', ...args],
    { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  verifiers.push(child);
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`verifier not listening: ${stderr}`)), WAIT_MS);
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      const line = JSON.parse(out.slice(0, nl));
      assert.equal(line.listening, true);
      assert.equal(line.host, '127.0.0.1');
      resolve(line.port);
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`verifier exited ${code}: ${stderr}`));
    });
  });
}

// A SIMPLIFIED push as smqd makes it (§13.10), signed (§13.11); tamper(h, body) may change
// the headers or the body after signing, as an attacker on the way would.
function makePush({ certUrl, msgId, sub = 'sub-a', body = 'hello world', target = '/hook?x=1',
                    tamper = null }) {
  const h = {
    date: new Date().toUTCString(),
    'content-type': 'text/plain;charset=utf-8',
    'content-md5': Buffer.from(crypto.createHash('md5').update(body).digest('hex')).toString('base64'),
    'x-mns-version': '2015-06-06',
    'x-mns-request-id': crypto.randomBytes(12).toString('hex').toUpperCase(),
    'x-mns-signing-cert-url': Buffer.from(certUrl).toString('base64'),
    'x-mns-topic-owner': '1000000000000000',
    'x-mns-topic-name': 'orders',
    'x-mns-subscriber': '1000000000000000',
    'x-mns-subscription-name': sub,
    'x-mns-publish-time': String(Date.now()),
    'x-mns-message-id': msgId,
  };
  const mns = Object.keys(h).filter((n) => n.startsWith('x-mns-')).sort()
    .map((n) => `${n}:${h[n]}\n`).join('');
  const sts = `POST\n${h['content-md5']}\n${h['content-type']}\n${h.date}\n${mns}${target}`;
  h.authorization = crypto.sign('RSA-SHA1', Buffer.from(sts), KEY).toString('base64');
  const push = { headers: h, body, target };
  if (tamper) tamper(push);
  return push;
}

function send(port, push) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: push.target,
      headers: push.headers, timeout: WAIT_MS }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('timeout', () => req.destroy(new Error('no answer from the verifier')));
    req.on('error', reject);
    req.end(push.body);
  });
}

function logLines(file) {
  return fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
}

let allowedUrl;
let otherUrl;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'smqd-push-verifier-'));
  // the same certificate at two URLs: only the allow-listed one may be used
  certServer = http.createServer((req, res) => {
    certFetches++;
    res.writeHead(200, { 'Content-Type': 'application/x-pem-file' }).end(CERT);
  });
  const port = await listen(certServer);
  certBase = `http://127.0.0.1:${port}`;
  allowedUrl = `${certBase}/smqd/signing-cert.pem`;
  otherUrl = `${certBase}/elsewhere/signing-cert.pem`;
});

after(() => {
  for (const child of verifiers) if (child.exitCode === null) process.kill(child.pid, 'SIGKILL');
  if (certServer) certServer.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test('the test key signs and its certificate verifies (the fixture itself)', () => {
  const sig = crypto.sign('RSA-SHA1', Buffer.from('x'), KEY);
  assert.equal(crypto.verify('RSA-SHA1', Buffer.from('x'), new crypto.X509Certificate(CERT).publicKey, sig),
    true);
});

test('valid pushes 204; tampered, unsigned and not-allowed ones 403; all logged', async () => {
  const log = path.join(dir, 'plain.jsonl');
  const port = await startVerifier(['--allow-cert-url', allowedUrl, '--log', log]);
  const msgId = '0909FF0D9C3A630C0000000000000007';

  assert.equal(await send(port, makePush({ certUrl: allowedUrl, msgId })), 204);
  assert.equal(await send(port, makePush({ certUrl: allowedUrl, msgId, target: '/' })), 204);
  const tampers = [
    (p) => { p.body = 'hello worle'; },                                  // body vs content-md5
    (p) => { p.headers['x-mns-topic-name'] = 'other'; },                 // a signed header
    (p) => { p.headers['x-mns-extra'] = '1'; },                          // one more x-mns-* header
    (p) => { p.headers.date = new Date(Date.now() + 1000).toUTCString(); },
    (p) => { p.target = '/hook?x=2'; },                                  // the request target
    (p) => { delete p.headers.authorization; },
    (p) => { p.headers.authorization = p.headers.authorization.replace(/^./, (c) => (c === 'A' ? 'B' : 'A')); },
  ];
  for (const tamper of tampers) {
    assert.equal(await send(port, makePush({ certUrl: allowedUrl, msgId, tamper })), 403, tamper.toString());
  }
  // signed correctly, but naming a certificate URL the verifier was not told to trust
  assert.equal(await send(port, makePush({ certUrl: otherUrl, msgId })), 403);

  const lines = logLines(log);
  assert.equal(lines.length, 2 + tampers.length + 1);
  assert.deepEqual(lines.map((l) => l.status), [204, 204, ...tampers.map(() => 403), 403]);
  assert.deepEqual(lines.map((l) => l.verified), [true, true, ...tampers.map(() => false), false]);
  for (const l of lines) {
    assert.equal(l.messageId, msgId);
    assert.equal(l.subscription, 'sub-a');
  }
  assert.equal(lines[0].body, 'hello world');
  assert.equal(lines[2].body, 'hello worle');
  assert.match(lines.at(-1).reason, /not allowed/);
  assert.equal(certFetches, 1, 'the certificate is fetched once per URL, and never from otherUrl');
});

test('--fail-first N answers 500 to the first N verified pushes of each message id', async () => {
  const log = path.join(dir, 'fail.jsonl');
  // the allow-list from the environment this time
  const port = await startVerifier(['--log', log, '--fail-first', '2'],
    { SMQD_PUSH_VERIFIER_ALLOW: `http://127.0.0.1:1/unused.pem, ${allowedUrl}` });
  const a = 'AAAAFF0D9C3A630C0000000000000001';
  const b = 'BBBBFF0D9C3A630C0000000000000002';
  const statuses = [];
  for (const msgId of [a, a, b, a, b, b, a]) {
    statuses.push(await send(port, makePush({ certUrl: allowedUrl, msgId, sub: 'sub-b', body: msgId })));
  }
  assert.deepEqual(statuses, [500, 500, 500, 204, 500, 204, 204]);
  // a push that does not verify is not counted as one of the N
  const c = 'CCCCFF0D9C3A630C0000000000000003';
  const tamper = (p) => { p.body = 'changed'; };
  assert.equal(await send(port, makePush({ certUrl: allowedUrl, msgId: c, sub: 'sub-b', tamper })), 403);
  assert.equal(await send(port, makePush({ certUrl: allowedUrl, msgId: c, sub: 'sub-b' })), 500);

  const lines = logLines(log);
  assert.deepEqual(lines.map((l) => [l.messageId, l.status, l.verified]), [
    [a, 500, true], [a, 500, true], [b, 500, true], [a, 204, true], [b, 500, true],
    [b, 204, true], [a, 204, true], [c, 403, false], [c, 500, true]]);
  assert.ok(lines.every((l) => l.subscription === 'sub-b'));
  assert.equal(lines[0].body, a);
});

test('refuses to start with no certificate URL to trust', async () => {
  await assert.rejects(startVerifier([], { SMQD_PUSH_VERIFIER_ALLOW: '' }), /exited 2: .*no certificate URL allowed/s);
});
