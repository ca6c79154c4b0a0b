'use strict';
// dbcheck.js — reads the database smqd left behind, without touching it.
//
// The check runs on a copy of smqd.db and smqd.db-wal: opening the real files would let SQLite
// replay and checkpoint the WAL, so the next smqd would recover from a state we prepared for it
// instead of the one the crash left.  The -shm file is not copied; SQLite rebuilds it from the
// WAL, exactly as it does for a real restart after a crash.
//
// It uses the sqlite3 command-line shell (Debian package sqlite3).  better-sqlite3 is not a
// dependency of this project; node:sqlite (Node >= 22.5) is used when the shell is missing.

const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

// The table layout of store.c schema v1: msg(queue_id, seq), msg_body(seq, body), queue(id, name).
// A msg row without a body or a body without a msg row is a torn write; both are reported.
const ROWS_SQL =
  "SELECT 'row', IFNULL(q.name, '?'), CAST(b.body AS TEXT) FROM msg m " +
  'LEFT JOIN queue q ON q.id = m.queue_id LEFT JOIN msg_body b ON b.seq = m.seq ' +
  "UNION ALL SELECT 'orphan-body', '', CAST(seq AS TEXT) FROM msg_body " +
  'WHERE seq NOT IN (SELECT seq FROM msg);';

// The topic side (schema v3 on): every pending notification with its subscription and the
// published body it waits to deliver, and the published messages no notification keeps (a
// message goes with its last notification, §13.8: such a row was left behind).
const NOTIFS_SQL =
  "SELECT 'notif', IFNULL(s.name, '?'), IFNULL(CAST(b.body AS TEXT), '') FROM notif n " +
  'LEFT JOIN subscription s ON s.id = n.sub_id LEFT JOIN tmsg_body b ON b.seq = n.seq ' +
  "UNION ALL SELECT 'orphan-tmsg', '', CAST(seq AS TEXT) FROM tmsg WHERE seq NOT IN (SELECT seq FROM notif) " +
  "UNION ALL SELECT 'orphan-tmsg-body', '', CAST(seq AS TEXT) FROM tmsg_body WHERE seq NOT IN (SELECT seq FROM tmsg);";

// smqd commits its schema durably in every sync mode; a cut must never take it.
const TABLES_SQL = "SELECT name FROM sqlite_schema WHERE type = 'table' AND name IN ('msg', 'msg_body', 'queue');";

function hasSqliteCli() {
  try {
    execFileSync('sqlite3', ['-version'], { stdio: 'ignore', timeout: 5000 });
    return true;
  } catch (e) {
    return false;
  }
}

function nodeSqlite() {
  try {
    return require('node:sqlite');
  } catch (e) {
    return null;
  }
}

// Fails early, before any server is started, when neither reader exists.
function requireReader() {
  if (hasSqliteCli()) return 'sqlite3';
  if (nodeSqlite()) return 'node:sqlite';
  throw new Error('crashloop needs the sqlite3 shell to check the database: apt-get install sqlite3 ' +
    '(or Node >= 22.5 for node:sqlite)');
}

function copyDb(dir, dataDir) {
  const dst = path.join(dir, 'check');
  fs.rmSync(dst, { recursive: true, force: true });
  fs.mkdirSync(dst);
  for (const suffix of ['', '-wal']) {
    const src = path.join(dataDir, 'smqd.db' + suffix);
    if (fs.existsSync(src)) fs.copyFileSync(src, path.join(dst, 'smqd.db' + suffix));
  }
  return path.join(dst, 'smqd.db');
}

function queryCli(file, sql) {
  const out = execFileSync('sqlite3', ['-batch', '-bail', '-noheader', '-list', '-separator', '\t', file, sql],
    { encoding: 'utf8', timeout: 60000, maxBuffer: 256 * 1024 * 1024 });
  return out.split('\n').filter((l) => l !== '').map((l) => l.split('\t'));
}

function queryNode(file, sql) {
  const db = new (nodeSqlite().DatabaseSync)(file);
  try {
    return db.prepare(sql).all().map((r) => Object.values(r).map((v) => (v === null ? '' : String(v))));
  } finally {
    db.close();
  }
}

// dataDir holds smqd.db (default: dir); the copy goes to dir/check.
// -> {integrity: 'ok' | text, rows: [{queue, body}], notifs: [{sub, body}], torn: [text],
//     schema: 'ok' | text}
function inspect(dir, reader, dataDir = dir) {
  const file = copyDb(dir, dataDir);
  const query = reader === 'sqlite3' ? queryCli : queryNode;
  const integrity = query(file, 'PRAGMA integrity_check;').map((r) => r.join(' ')).join('; ');
  const rows = [];
  const notifs = [];
  const torn = [];
  const tables = query(file, TABLES_SQL).length;
  if (tables !== 3) {
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
    return { integrity, rows, notifs, torn, schema: `${tables} of smqd's 3 tables are on disk` };
  }
  for (const [kind, queue, body] of query(file, ROWS_SQL)) {
    if (kind === 'orphan-body') torn.push(`msg_body seq ${body} has no msg row`);
    else if (body === '' || body === undefined) torn.push(`a msg row of ${queue} has no body`);
    else rows.push({ queue, body });
  }
  for (const [kind, sub, body] of query(file, NOTIFS_SQL)) {
    if (kind === 'notif') notifs.push({ sub, body });
    else torn.push(`${kind === 'orphan-tmsg' ? 'tmsg' : 'tmsg_body'} seq ${body} is kept by no notification`);
  }
  fs.rmSync(path.dirname(file), { recursive: true, force: true });
  return { integrity, rows, notifs, torn, schema: 'ok' };
}

module.exports = { inspect, requireReader };
