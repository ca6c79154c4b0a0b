'use strict';
// push_endpoint.js — the loopback HTTP endpoint of the crash loop's HTTP subscriptions
// (docs/protocol.md §13.10–§13.12).  It lives in the harness process, so it is up for the
// whole run and outlives every SIGKILL of smqd.
//
// Every push is verified as docs/examples/push-verifier.js does (its stringToSign and bodyMd5):
// the certificate URL must be the one of an smqd this run started (its own listener's,
// trusted once that server is up), the body must match content-md5, and the signature must
// verify with that certificate's key.  A push that does not verify is a violation and is
// answered 403.  A verified push goes to the PublishLedger, which says what to answer: 500 to
// the first push of a publish for a subscription whose `failFirst` picks it (a retry must
// follow), else a 2xx.  The ledger records a push before it is answered, so whatever smqd
// saw answered 2xx is in the ledger even if smqd is killed right after.

const crypto = require('crypto');
const http = require('http');
const { signatureOk, bodyMd5, headerMap, readBody } = require('../../docs/examples/push-verifier.js');

// A push may reach the endpoint before the harness has fetched the certificate of the server
// that sent it (pushes pending at a kill go out right after the restart): it waits that long
// for the URL to be trusted, well inside smqd's push timeout (5 s, §13.10).
const TRUST_WAIT_MS = 3000;
const CERT_TIMEOUT_MS = 5000;

function getText(url) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => (res.statusCode === 200 ? resolve(text) : reject(new Error(`${url}: HTTP ${res.statusCode}`))));
    });
    req.setTimeout(CERT_TIMEOUT_MS, () => req.destroy(new Error(`${url}: timed out`)));
    req.on('error', reject);
  });
}

// The certificate keys of the servers of this run, by certificate URL.
class Trust {
  constructor() {
    this.keys = new Map();       // URL -> KeyObject
    this.waiting = new Map();    // URL -> [resolve] of pushes that came before trust()
    this.firstKey = null;        // the PEM of the public key of the first server
  }

  // Fetches the certificate smqd serves at its default URL (§13.11) and trusts that URL.
  // -> false when its key differs from the first server's: the key is kept with the data, a
  // restart must keep it.
  async trust(endpoint) {
    const url = `${endpoint}/smqd/signing-cert.pem`;
    const key = new crypto.X509Certificate(await getText(url)).publicKey;
    const pem = key.export({ type: 'spki', format: 'pem' });
    if (this.firstKey === null) this.firstKey = pem;
    this.keys.set(url, key);
    for (const resolve of this.waiting.get(url) || []) resolve(key);
    this.waiting.delete(url);
    return pem === this.firstKey;
  }

  // -> the key of url, or null when it is not trusted within TRUST_WAIT_MS.
  keyOf(url, waitMs) {
    if (this.keys.has(url)) return Promise.resolve(this.keys.get(url));
    return new Promise((resolve) => {
      const list = this.waiting.get(url) || [];
      list.push(resolve);
      this.waiting.set(url, list);
      setTimeout(() => resolve(null), waitMs).unref();
    });
  }
}

// null when the push verifies (§13.11), else why not.
async function verify(req, h, body, trust, waitMs) {
  if (h === null) return 'a header came twice';
  const encoded = h.get('x-mns-signing-cert-url') || '';
  const url = Buffer.from(encoded, 'base64').toString('utf8');
  if (h.get('content-md5') !== bodyMd5(body)) return 'body does not match content-md5';
  const key = await trust.keyOf(url, waitMs);
  if (key === null) return `certificate URL ${JSON.stringify(url)} is not one of this run's servers`;
  if (!signatureOk(req.method, req.url, h, key)) return 'signature does not verify';
  return null;
}

// One push: verified, then recorded and answered as the ledger says.
async function answer(req, res, o) {
  const body = await readBody(req);
  const h = headerMap(req.rawHeaders);
  const cycle = o.cycleOf();
  const why = req.method === 'POST' ? await verify(req, h, body, o.trust, o.trustWaitMs || TRUST_WAIT_MS)
    : `method ${req.method}`;
  let status = 403;
  if (why !== null) {
    o.ledger.violation(cycle, 'push-unverified', `${req.method} ${req.url}: ${why}`);
  } else {
    const name = new URL(req.url, 'http://x').pathname.slice(1);
    const text = body.toString('utf8');
    status = o.book.pushed(cycle, name, h, text, o.failFirst(name, text));
  }
  res.writeHead(status, { 'Content-Length': 0 }).end();
}

// start({book, ledger, cycleOf, failFirst(name, body)[, trustWaitMs]})
//   -> {port, url(path), trust(endpoint), close()}
function start(o) {
  const trust = new Trust();
  const sockets = new Set();
  const server = http.createServer((req, res) => {
    answer(req, res, { ...o, trust }).catch((e) => {
      // A push cut off by a kill: smqd saw no answer and retries it after the restart.
      if (!res.headersSent && !req.destroyed) res.writeHead(500, { 'Content-Length': 0 }).end();
      if (!/aborted|ECONNRESET|socket hang up/.test(e.message)) o.ledger.anomaly(o.cycleOf(), 'push-endpoint', e.message);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = server.address().port;
      resolve({
        port,
        url: (p) => `http://127.0.0.1:${port}${p}`,
        trust: (endpoint) => trust.trust(endpoint),
        close: () => new Promise((done) => {
          server.close(() => done());
          for (const s of sockets) s.destroy();
        })
      });
    });
  });
}

module.exports = { start };
