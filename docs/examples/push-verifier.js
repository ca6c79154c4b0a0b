#!/usr/bin/env node
'use strict';
// push-verifier.js — an HTTP endpoint that verifies smqd's signed topic pushes
// (docs/protocol.md §13.10, §13.11), with nothing but Node's built-in modules.
//
// For each POST it base64-decodes x-mns-signing-cert-url, fetches the PEM certificate from
// that URL (once per URL, then cached) — only when the URL is on the allow-list, since a
// verifier must trust smqd's certificate URL explicitly (§13.11) —, checks the body against
// content-md5, rebuilds the string to sign from the request as received and verifies the
// authorization header as an RSA PKCS#1 v1.5 SHA-1 signature. It answers 204 when the push
// verifies, 403 when it does not, 503 when the certificate could not be fetched.
//
//   node push-verifier.js --allow-cert-url http://127.0.0.1:8080/smqd/signing-cert.pem \
//        [--host 127.0.0.1] [--port 8000] [--log pushes.jsonl] [--fail-first N] [--ca-file ca.pem]
//
//   --allow-cert-url URL  a certificate URL to trust, exactly as smqd sends it (repeatable);
//                         SMQD_PUSH_VERIFIER_ALLOW adds more (separated by commas or blanks)
//   --host, --port        where to listen (default 127.0.0.1:8000); port 0 picks a free one.
//                         Once listening, one JSON line on stdout: {"listening":true,"host","port"}
//   --log FILE            appends one JSON line per push received, verified or not: verified,
//                         status, reason, messageId, subscription, topic, requestId, body
//   --fail-first N        answers 500 to the first N verified pushes of each message id (to
//                         see smqd retry, §13.12), then 204
//   --ca-file FILE        CA certificates for an https:// certificate URL (default: the system's)
//
// A production endpoint would also dedupe by message id (a push may come more than once) and
// may bound how old the date header can be; smqd sends a fresh date on every attempt.

const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const https = require('https');

const BODY_CAP = 4 * 1024 * 1024;         // far above any notification (§13.9)
const CERT_CAP = 64 * 1024;
const CERT_TIMEOUT_MS = 5000;

function usage(msg) {
  process.stderr.write(`push-verifier: ${msg}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const o = { host: '127.0.0.1', port: 8000, log: null, failFirst: 0, caFile: null, allow: [] };
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i];
    const value = argv[i + 1];
    if (value === undefined) usage(`${name} needs a value`);
    i++;
    if (name === '--allow-cert-url') o.allow.push(value);
    else if (name === '--host') o.host = value;
    else if (name === '--port') o.port = Number(value);
    else if (name === '--log') o.log = value;
    else if (name === '--fail-first') o.failFirst = Number(value);
    else if (name === '--ca-file') o.caFile = value;
    else usage(`unknown option ${name}`);
  }
  const env = process.env.SMQD_PUSH_VERIFIER_ALLOW || '';
  o.allow.push(...env.split(/[\s,]+/).filter((u) => u !== ''));
  if (!Number.isInteger(o.port) || o.port < 0 || o.port > 65535) usage('bad --port');
  if (!Number.isInteger(o.failFirst) || o.failFirst < 0) usage('bad --fail-first');
  if (o.allow.length === 0) usage('no certificate URL allowed: give --allow-cert-url URL');
  return o;
}

// ---- the certificate, by URL ----------------------------------------------------------------

function fetchPem(url, ca) {
  return new Promise((resolve, reject) => {
    const get = url.startsWith('https:') ? https.get : http.get;
    const req = get(url, ca ? { ca } : {}, (res) => {
      let pem = '';
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`certificate URL answered ${res.statusCode}`));
        return;
      }
      res.setEncoding('utf8');
      res.on('data', (d) => {
        pem += d;
        if (pem.length > CERT_CAP) req.destroy(new Error('certificate too large'));
      });
      res.on('end', () => resolve(pem));
    });
    req.setTimeout(CERT_TIMEOUT_MS, () => req.destroy(new Error('certificate fetch timed out')));
    req.on('error', reject);
  });
}

function certCache(ca) {
  const byUrl = new Map();             // URL -> Promise of the public key
  return (url) => {
    if (!byUrl.has(url)) {
      const key = fetchPem(url, ca).then((pem) => new crypto.X509Certificate(pem).publicKey);
      key.catch(() => byUrl.delete(url));   // a failed fetch is tried again next time
      byUrl.set(url, key);
    }
    return byUrl.get(url);
  };
}

// ---- §13.11's string to sign, from the request as received ---------------------------------

// Header name (lower case) -> value; null when a signed header came twice (ambiguous).
function headerMap(rawHeaders) {
  const m = new Map();
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i].toLowerCase();
    if (m.has(name) && (name.startsWith('x-mns-') || name.startsWith('content-')
                        || name === 'date' || name === 'authorization')) return null;
    m.set(name, rawHeaders[i + 1]);
  }
  return m;
}

function stringToSign(method, target, h) {
  const mns = [...h.keys()].filter((n) => n.startsWith('x-mns-')).sort()
    .map((n) => `${n}:${h.get(n)}\n`).join('');
  return `${method}\n${h.get('content-md5') || ''}\n${h.get('content-type') || ''}\n` +
    `${h.get('date') || ''}\n${mns}${target}`;
}

// Whether the push's authorization is §13.11's signature of the request as received under key
// (an RSA public key: the certificate's).
function signatureOk(method, target, h, key) {
  const sig = Buffer.from(h.get('authorization') || '', 'base64');
  const sts = Buffer.from(stringToSign(method, target, h), 'utf8');
  return sig.length > 0 && crypto.verify('RSA-SHA1', sts, key, sig);
}

// content-md5 as §13.10 makes it: base64 of the lower-case hex MD5 of the body.
function bodyMd5(body) {
  return Buffer.from(crypto.createHash('md5').update(body).digest('hex')).toString('base64');
}

// x-mns-message-id (SIMPLIFIED), else the MessageId of the XML or JSON notification (§13.9).
function messageIdOf(h, body) {
  if (h.get('x-mns-message-id')) return h.get('x-mns-message-id');
  const text = body.toString('utf8');
  const m = /<MessageId>([^<]*)<\/MessageId>/.exec(text) || /"MessageId"\s*:\s*"([^"]*)"/.exec(text);
  return m ? m[1] : null;
}

// null when the push verifies, else { status, reason }.
async function verify(req, h, body, opts, keyOf) {
  const encoded = h.get('x-mns-signing-cert-url') || '';
  const url = Buffer.from(encoded, 'base64').toString('utf8');
  if (!encoded || Buffer.from(url).toString('base64') !== encoded) {
    return { status: 403, reason: 'x-mns-signing-cert-url is not base64' };
  }
  if (!opts.allow.includes(url)) return { status: 403, reason: `certificate URL not allowed: ${url}` };
  if (h.get('content-md5') !== bodyMd5(body)) return { status: 403, reason: 'body does not match content-md5' };
  let key;
  try {
    key = await keyOf(url);
  } catch (e) {
    return { status: 503, reason: `certificate from ${url}: ${e.message}` };
  }
  if (!signatureOk(req.method, req.url, h, key)) return { status: 403, reason: 'signature does not verify' };
  return null;
}

// ---- the endpoint ---------------------------------------------------------------------------

function readBody(req) {
  return new Promise((resolve, reject) => {
    const parts = [];
    let len = 0;
    req.on('data', (d) => {
      len += d.length;
      if (len > BODY_CAP) req.destroy(new Error('body too large'));
      else parts.push(d);
    });
    req.on('end', () => resolve(Buffer.concat(parts)));
    req.on('error', reject);
  });
}

function handler(opts) {
  const keyOf = certCache(opts.caFile ? fs.readFileSync(opts.caFile) : null);
  const verifiedCount = new Map();     // message id -> verified pushes seen
  return (req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405, { Allow: 'POST', 'Content-Length': 0 }).end();
      return;
    }
    readBody(req).then((body) => answer(req, res, body, opts, keyOf, verifiedCount)).catch((e) => {
      process.stderr.write(`push-verifier: ${e.message}\n`);
      if (!res.headersSent && !req.destroyed) res.writeHead(500, { 'Content-Length': 0 }).end();
    });
  };
}

// Verifies one push, logs it, and answers.
async function answer(req, res, body, opts, keyOf, verifiedCount) {
  const h = headerMap(req.rawHeaders);
  const failure = h ? await verify(req, h, body, opts, keyOf)
    : { status: 403, reason: 'a signed header came twice' };
  const get = (name) => (h && h.get(name)) || null;
  const messageId = h ? messageIdOf(h, body) : null;
  let status = failure ? failure.status : 204;
  if (!failure) {
    const n = (verifiedCount.get(messageId) || 0) + 1;
    verifiedCount.set(messageId, n);
    if (n <= opts.failFirst) status = 500;
  }
  if (opts.log) {
    fs.appendFileSync(opts.log, JSON.stringify({
      time: new Date().toISOString(), verified: !failure, status,
      reason: failure ? failure.reason : null, messageId,
      subscription: get('x-mns-subscription-name'), topic: get('x-mns-topic-name'),
      requestId: get('x-mns-request-id'), body: body.toString('utf8'),
    }) + '\n');
  }
  if (failure) process.stderr.write(`push-verifier: ${failure.status} ${failure.reason}\n`);
  res.writeHead(status, status === 204 ? {} : { 'Content-Length': 0 }).end();
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const server = http.createServer(handler(opts));
  server.listen(opts.port, opts.host, () => {
    process.stdout.write(JSON.stringify({ listening: true, host: opts.host,
      port: server.address().port }) + '\n');
  });
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

if (require.main === module) main();
module.exports = { stringToSign, signatureOk, bodyMd5, headerMap, readBody };
