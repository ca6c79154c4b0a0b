'use strict';
// pgcheck.js — reads the messages smqd's PostgreSQL backend holds, for the ledger, like
// tests/crashloop/dbcheck.js reads an SQLite file: rows [{queue, body}] of smq_msg joined to
// smq_body and smq_queue (pg-contract.md, schema version 1), and the torn rows (a msg without a
// body, a body without a msg). Read with psql, so nothing in the test links libpq.

const { execFileSync } = require('child_process');

const SEP = '\x1f';
const ROWS_SQL =
  "SELECT 'row', COALESCE(q.name, '?'), COALESCE(convert_from(b.body, 'UTF8'), '') FROM smq_msg m " +
  'LEFT JOIN smq_queue q ON q.id = m.queue_id LEFT JOIN smq_body b ON b.seq = m.seq ' +
  "UNION ALL SELECT 'orphan-body', '', seq::text FROM smq_body WHERE seq NOT IN (SELECT seq FROM smq_msg)";

function psql(dsn, sql) {
  const out = execFileSync('psql', [dsn, '-v', 'ON_ERROR_STOP=1', '-XAtq', '-F', SEP, '-c', sql],
    { encoding: 'utf8', timeout: 30000, stdio: ['ignore', 'pipe', 'pipe'] });
  return out.split('\n').filter((l) => l !== '').map((l) => l.split(SEP));
}

// inspect(dsn) -> {rows, torn, lease: {holder, epoch, takeovers}}
function inspect(dsn) {
  const rows = [];
  const torn = [];
  for (const [kind, queue, body] of psql(dsn, ROWS_SQL)) {
    if (kind === 'orphan-body') torn.push(`smq_body seq ${body} has no smq_msg row`);
    else if (body === '') torn.push(`an smq_msg row of ${queue} has no body`);
    else rows.push({ queue, body });
  }
  const [l] = psql(dsn, 'SELECT COALESCE(holder_node, \'\'), epoch, takeovers FROM smq_lease WHERE id = 1');
  const lease = l ? { holder: l[0], epoch: Number(l[1]), takeovers: Number(l[2]) } : null;
  return { rows, torn, lease };
}

module.exports = { inspect, psql };
