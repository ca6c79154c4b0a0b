'use strict';
// harness.js — starts the real smqd binary for the Node SDK suites.
//
// Every server binds 127.0.0.1 port 0 with its own mkdtemp data dir (so suites can run in
// parallel), is found ready by parsing its "listening on http://127.0.0.1:PORT" log line,
// is killed by PID in after(), and is guarded by a watchdog process that SIGKILLs it if this
// node process dies without cleaning up or the time limit passes.

const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');

let Client;
try {
  Client = require('@alicloud/mns');
} catch (e) {
  throw new Error('The Node SDK is not installed: run `npm ci --prefix tests/integration/node` ' +
    '(the tests never download it themselves). Cause: ' + e.message);
}

const AK = 'testAccessKeyId';
const SK = 'testAccessKeySecret';
const ACCOUNT_ID = '1234567890123456';
const MAX_LIFE_S = Number(process.env.SMQD_TEST_MAX_S || 280);

function smqdBin() {
  const bin = process.env.SMQD_BIN;
  if (!bin || !fs.existsSync(bin)) {
    throw new Error(`SMQD_BIN must point to the smqd binary (got '${bin || ''}')`);
  }
  return bin;
}

// SMQD_TEST_PG_DSN (a libpq conninfo, e.g. tests/pg/pg-server.sh's DIR/dsn): every server
// stores into that PostgreSQL instead of an SQLite file, each data dir in its own schema
// (pg-contract.md: names are unqualified, the search_path decides), as one node "a" of a
// one-node cluster. Unset: SQLite, exactly as before.
const PG_DSN = process.env.SMQD_TEST_PG_DSN || '';

// The schema of a data dir: derived from its unique mkdtemp name, created once with psql.
function pgSchemaFor(dir) {
  const schema = 's_' + path.basename(dir).replace(/[^A-Za-z0-9]/g, '_').toLowerCase();
  require('child_process').execFileSync('psql',
    [PG_DSN, '-v', 'ON_ERROR_STOP=1', '-qc', `CREATE SCHEMA IF NOT EXISTS ${schema}`],
    { stdio: ['ignore', 'ignore', 'inherit'], timeout: 20000 });
  return schema;
}

function storageLines(dir) {
  if (!PG_DSN) return ['[storage]', `path = ${dir}/smqd.db`, 'sync = full'];
  return ['[storage]', 'backend = postgresql',
    `dsn = ${PG_DSN} options='-c search_path=${pgSchemaFor(dir)}'`,
    '[cluster]', 'node_id = a'];
}

// writeConfig(dir, [authLines]) — the standard test config; authLines go at the end of
// [auth] (more key.ID = SECRET lines), then any [grant.*] sections may be appended.
function writeConfig(dir, authLines = []) {
  fs.writeFileSync(path.join(dir, 'smqd.conf'), [
    '[server]', 'listen = 127.0.0.1:0',
    ...storageLines(dir),
    '[auth]', `access_key_id = ${AK}`, `access_key_secret = ${SK}`,
    'key.secondKey = secondSecret', ...authLines,
    '[log]', 'level = info',
    // Port 0: the default admin port (8081) would collide between parallel test files.
    '[admin]', 'listen = 127.0.0.1:0', ''
  ].join('\n'));
}

// The watchdog is a separate process, so it still works if this one is SIGKILLed.
function startWatchdog(pid) {
  const script = `end=$(( $(date +%s) + ${MAX_LIFE_S} ));
    while kill -0 ${pid} 2>/dev/null && kill -0 ${process.pid} 2>/dev/null && [ $(date +%s) -lt $end ];
    do sleep 0.5; done; kill -9 ${pid} 2>/dev/null`;
  const w = spawn('bash', ['-c', script], { stdio: 'ignore' });
  w.unref();
  return w;
}

// startServer([dir]) -> {proc, pid, dir, port, endpoint, log(), stop(), stopCleanly(), kill9()}
// With dir, reuses that data dir (restart on the same data).
function startServer(dir) {
  const fresh = !dir;
  if (fresh) {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'smqd-node-'));
    writeConfig(dir);
  }
  const proc = spawn(smqdBin(), ['-c', path.join(dir, 'smqd.conf')],
    { stdio: ['ignore', 'ignore', 'pipe'] });
  const watchdog = startWatchdog(proc.pid);
  let log = '';
  let exited = null;
  const exitPromise = new Promise((resolve) => {
    proc.on('exit', (code, signal) => { exited = { code, signal }; resolve(exited); });
  });

  const server = {
    proc, pid: proc.pid, dir, port: 0, endpoint: '',
    log: () => log,
    // SIGTERM by PID, bounded wait, then SIGKILL. Resolves to {code, signal}.
    async stop() {
      if (exited) return exited;
      process.kill(proc.pid, 'SIGTERM');
      const timer = setTimeout(() => { try { process.kill(proc.pid, 'SIGKILL'); } catch (e) { /* gone */ } }, 10000);
      const r = await exitPromise;
      clearTimeout(timer);
      try { watchdog.kill(); } catch (e) { /* gone */ }
      return r;
    },
    // stop(), and an error (with the server's log) unless it exited 0: under the
    // sanitizer build a leak or memory error found at exit makes the status non-zero.
    async stopCleanly() {
      const exit = await server.stop();
      if (!(exit.code === 0 && exit.signal === null)) {
        throw new Error('smqd exited with ' + JSON.stringify(exit) + '\n' + log);
      }
    },
    async kill9() {
      if (exited) return exited;
      process.kill(proc.pid, 'SIGKILL');
      const r = await exitPromise;
      try { watchdog.kill(); } catch (e) { /* gone */ }
      return r;
    },
    removeData() { fs.rmSync(dir, { recursive: true, force: true }); }
  };

  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      server.kill9();
      reject(new Error('smqd did not log "listening on http://" within 10 s:\n' + log));
    }, 10000);
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (chunk) => {
      log += chunk;
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(log);
      if (m && !server.port) {
        clearTimeout(timer);
        server.port = Number(m[1]);
        server.endpoint = `http://127.0.0.1:${server.port}`;
        // The admin listener binds first, so its line is already in the log.
        const a = /admin listener bound to (http:\/\/127\.0\.0\.1:\d+)/.exec(log);
        server.admin = a ? a[1] : '';
        // On PostgreSQL the MNS listener is up but gated (503) until the node holds the
        // lease: wait for the admin /ready 200 that says it is active.
        if (!PG_DSN) resolve(server);
        else waitReady(server, 15000).then(() => resolve(server), (e) => {
          server.kill9();
          reject(new Error(e.message + ':\n' + log));
        });
      }
    });
    proc.on('exit', () => {
      if (!server.port) {
        clearTimeout(timer);
        reject(new Error('smqd exited before listening:\n' + log));
      }
    });
  });
}

// waitReady(server, ms): polls the admin GET /ready until 200 (the node is active).
async function waitReady(server, ms) {
  const end = Date.now() + ms;
  for (;;) {
    const r = await adminRequest(server, 'GET', '/ready').catch(() => ({ status: 0 }));
    if (r.status === 200) return;
    if (Date.now() > end) throw new Error(`/ready not 200 within ${ms} ms (last ${r.status})`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

// client(server, [overrides]) — an SDK client exactly as a user creates one.
function client(server, opts = {}) {
  return new Client(ACCOUNT_ID, Object.assign({
    endpoint: server.endpoint,
    accessKeyId: AK,
    accessKeySecret: SK
  }, opts));
}

// The SDK turns an <Error> into an Error whose name is 'MNS' + Code + 'Error'.
function mnsError(code) {
  return (err) => {
    if (err && err.name === `MNS${code}Error`) return true;
    throw new Error(`expected MNS${code}Error, got ${err && err.name}: ${err && err.message}`);
  };
}

function md5Upper(text) {
  return require('crypto').createHash('md5').update(text, 'utf8').digest('hex').toUpperCase();
}

// adminRequest(server, method, path) -> {status, body}: the admin listener's JSON API
// (docs/admin-api.md), e.g. a redrive, which no SDK can ask for.
function adminRequest(server, method, pathAndQuery) {
  const http = require('http');
  return new Promise((resolve, reject) => {
    const req = http.request(server.admin + pathAndQuery, { method }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', reject);
    req.setTimeout(10000, () => req.destroy(new Error('admin request timed out')));
    req.end();
  });
}

module.exports = { Client, startServer, waitReady, PG_DSN, writeConfig, client, mnsError, md5Upper, adminRequest, AK, SK };
