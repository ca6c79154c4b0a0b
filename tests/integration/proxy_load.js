#!/usr/bin/env node
// proxy_load.js — the load of test_proxy.sh, from one client address through HAProxy:
// many consumers long-polling ReceiveMessage at once while producers send, each message
// deleted by the consumer that got it.  Plain node http with a keep-alive agent (one
// socket per consumer) and signature V2 signed here, so that a thousand concurrent
// clients cost one process, not a thousand curls.
//
//   node proxy_load.js load --target HOST:PORT --local ADDR --queue Q --consumers N
//        --messages M --wait S --producers P --admin HOST:PORT --deadline-ms MS
//     Waits (up to 10 s) for the N polls to be parked in smqd (its /metrics in-flight
//     gauge), then sends; prints one JSON line: sent, received, duplicates, missing,
//     refused (every answer but 201/200/204 and a poll's 404 MessageNotExist, and every
//     socket error), parked (the gauge when sends began).  Exit 0 when every message
//     was received exactly once and nothing was refused.
//   node proxy_load.js hold --target HOST:PORT --local ADDR --count N
//     Opens N TCP connections, waits 1 s, prints {"open":o,"closed":c}: how many the
//     server kept and how many it closed.
'use strict';
const http = require('http');
const net = require('net');
const crypto = require('crypto');

const AK = process.env.MNS_AK || 'testAccessKeyId';
const SK = process.env.MNS_SK || 'testAccessKeySecret';
const NS = 'http://mns.aliyuncs.com/doc/v1/';

function args() {
  const a = { mode: process.argv[2] };
  for (let i = 3; i < process.argv.length; i += 2)
    a[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
  return a;
}

function hostPort(s) {
  const i = s.lastIndexOf(':');
  return { host: s.slice(0, i), port: Number(s.slice(i + 1)) };
}

// docs/protocol.md §3.1: VERB, Content-MD5, Content-Type, Date, x-mns-* headers, resource.
function sign(method, resource, md5, ctype, date) {
  const sts = `${method}\n${md5}\n${ctype}\n${date}\nx-mns-version:2015-06-06\n${resource}`;
  return `MNS ${AK}:${crypto.createHmac('sha1', SK).update(sts).digest('base64')}`;
}

function request(agent, opts, method, resource, body) {
  return new Promise((resolve) => {
    const date = new Date().toUTCString();
    const headers = { Host: opts.hostHeader, Date: date, 'x-mns-version': '2015-06-06' };
    let md5 = '', ctype = '';
    if (body !== undefined) {
      ctype = 'text/xml;charset=UTF-8';
      md5 = Buffer.from(crypto.createHash('md5').update(body).digest('hex')).toString('base64');
      headers['Content-Type'] = ctype;
      headers['Content-MD5'] = md5;
      headers['Content-Length'] = Buffer.byteLength(body);
    }
    headers.Authorization = sign(method, resource, md5, ctype, date);
    const req = http.request({ host: opts.host, port: opts.port, localAddress: opts.local,
                               agent, method, path: resource, headers }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { data += c; });
      res.on('end', () => resolve({ status: res.statusCode, body: data }));
      res.on('error', (e) => resolve({ status: 0, body: String(e) }));
    });
    req.setTimeout(opts.timeoutMs, () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve({ status: 0, body: String(e) }));
    if (body !== undefined) req.write(body);
    req.end();
  });
}

function tag(xml, name) {
  const m = xml.match(new RegExp(`<${name}>([^<]*)</${name}>`));
  return m ? m[1] : null;
}

function parkedNow(admin) {
  return new Promise((resolve) => {
    const hp = hostPort(admin);
    const headers = { Authorization: `Bearer ${process.env.ADMIN_TOKEN || ''}` };
    http.get({ host: hp.host, port: hp.port, path: '/metrics', agent: false, headers }, (res) => {
      let d = '';
      res.on('data', (c) => { d += c; });
      res.on('end', () => {
        const m = d.match(/^smqd_http_requests_in_flight (\d+)/m);
        resolve(m ? Number(m[1]) : -1);
      });
    }).on('error', () => resolve(-1));
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function load(a) {
  const hp = hostPort(a.target);
  const n = Number(a.consumers), m = Number(a.messages), wait = Number(a.wait);
  const opts = { host: hp.host, port: hp.port, hostHeader: a.target, local: a.local,
                 timeoutMs: (wait + 20) * 1000 };
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  const deadline = Date.now() + Number(a['deadline-ms']);
  const got = new Map();
  const refused = {};
  let sent = 0, duplicates = 0, done = false, parked = -1, deleting = 0;
  const refuse = (what, r) => {
    const key = `${what} ${r.status} ${tag(r.body, 'Code') || r.body.slice(0, 60)}`;
    refused[key] = (refused[key] || 0) + 1;
  };
  const q = `/queues/${a.queue}/messages`;

  async function consumer() {
    while (!done && Date.now() < deadline) {
      const r = await request(agent, opts, 'GET', `${q}?waitseconds=${wait}`);
      if (done) break;           // the last message is in: the polls still parked are cut
      if (r.status === 404 && tag(r.body, 'Code') === 'MessageNotExist') continue;
      if (r.status !== 200) { refuse('receive', r); await sleep(100); continue; }
      const body = tag(r.body, 'MessageBody'), handle = tag(r.body, 'ReceiptHandle');
      if (got.has(body)) duplicates++;
      got.set(body, (got.get(body) || 0) + 1);
      deleting++;
      const d = await request(agent, opts, 'DELETE', `${q}?ReceiptHandle=${handle}`);
      deleting--;
      if (d.status !== 204) refuse('delete', d);
      if (got.size >= m && deleting === 0 && !done) {
        done = true;
        agent.destroy();
      }
    }
  }

  async function producer(first, step) {
    for (let i = first; i < m; i += step) {
      const body = `<?xml version="1.0" encoding="UTF-8"?><Message xmlns="${NS}">` +
                   `<MessageBody>m-${i}</MessageBody></Message>`;
      const r = await request(agent, opts, 'POST', q, body);
      if (r.status === 201) sent++; else refuse('send', r);
    }
  }

  const consumers = [];
  for (let i = 0; i < n; i++) consumers.push(consumer());
  // Every poll parked before the first send: the consumers hold their connections
  // through HAProxy (all from its one address) while the producers need more.
  for (let t = 0; t < 100; t++) {
    parked = await parkedNow(a.admin);
    if (parked >= n) break;
    await sleep(100);
  }
  const producers = [];
  for (let p = 0; p < Number(a.producers); p++) producers.push(producer(p, Number(a.producers)));
  await Promise.all(producers);
  await Promise.all(consumers);
  let missing = 0;
  for (let i = 0; i < m; i++) if (!got.has(`m-${i}`)) missing++;
  const out = { sent, received: got.size, duplicates, missing, refused, parked };
  console.log(JSON.stringify(out));
  return sent === m && got.size === m && duplicates === 0 && missing === 0 &&
         Object.keys(refused).length === 0 && parked >= n;
}

async function hold(a) {
  const hp = hostPort(a.target);
  const socks = [];
  let closed = 0;
  for (let i = 0; i < Number(a.count); i++) {
    const s = net.connect({ host: hp.host, port: hp.port, localAddress: a.local });
    s.on('error', () => {});
    s.on('close', () => { closed++; });
    socks.push(s);
  }
  await sleep(1000);
  console.log(JSON.stringify({ open: socks.length - closed, closed }));
  for (const s of socks) s.destroy();
  return true;
}

(async () => {
  const a = args();
  const ok = a.mode === 'hold' ? await hold(a) : await load(a);
  process.exit(ok ? 0 : 1);
})();
