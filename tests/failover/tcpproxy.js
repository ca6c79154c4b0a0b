'use strict';
// tcpproxy.js — a loopback TCP proxy between one smqd node and one PostgreSQL, so the test can
// cut that node off from the database without root (no network namespace or nft needed):
// freeze() stops forwarding in both directions on every connection and holds new ones (a
// black hole, like a pulled cable: libpq sees no error, only silence); thaw() forwards again;
// close() ends everything.

const net = require('net');

function start(targetPort) {
  const conns = new Set();
  let frozen = false;
  const held = [];
  const pipe = (client) => {
    const up = net.connect(targetPort, '127.0.0.1');
    const c = { client, up };
    conns.add(c);
    const end = () => { conns.delete(c); client.destroy(); up.destroy(); };
    client.on('error', end); up.on('error', end); client.on('close', end); up.on('close', end);
    client.on('data', (d) => { if (!frozen) up.write(d); });
    up.on('data', (d) => { if (!frozen) client.write(d); });
  };
  const server = net.createServer((client) => {
    client.on('error', () => client.destroy());
    if (frozen) held.push(client); else pipe(client);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve({
      port: server.address().port,
      // Frozen bytes are dropped, not queued: the connections they belonged to are dead for
      // the node (its lease is gone by the time we thaw), as after a real partition.
      freeze() { frozen = true; },
      thaw() {
        frozen = false;
        for (const c of conns) { c.client.destroy(); c.up.destroy(); }
        while (held.length) held.shift().destroy();
      },
      close() {
        for (const c of conns) { c.client.destroy(); c.up.destroy(); }
        while (held.length) held.shift().destroy();
        server.close();
      }
    }));
  });
}

module.exports = { start };
