'use strict';
// ledger.js — what the clients were told, across every crash cycle, and the invariants over it.
//
// Only the client side is trusted: a send counts as acknowledged when its 201 arrived, a delete
// when its 204 (or its handle was absent from a BatchDelete's 404 <Errors>) arrived.  Every body
// is unique in the whole run, so a body names one send, and everything the server later shows
// (receives, rows on disk) can be traced back to what it promised.
//
// One record per body (a long run sends millions): the per-cycle disk check walks only the
// `live` set (acknowledged and not acknowledged-deleted), which the back-pressure keeps small.
//
// Violations are collected, never thrown: one run should report everything it finds, with the
// cycle, so the seed and the log of that cycle can be kept.  A standing problem (a lost message
// stays lost) is reported once, at the first cycle that shows it.

const crypto = require('crypto');

function md5Upper(text) {
  return crypto.createHash('md5').update(text, 'utf8').digest('hex').toUpperCase();
}

// The state of one body.  -1 means "not yet".
function newRecord(queue) {
  return {
    queue,
    id: undefined,     // the first MessageId the server gave it (send ack or receive)
    ackCycle: -1,      // cycle of the 201
    seenCycle: -1,     // cycle of the first delivery
    inDrain: false,    // delivered by the final drain
    delCycle: -1,      // cycle of the acknowledged delete
    delDc: 0,          // DequeueCount of the handle that was deleted
    delAt: 0,          // client time the delete's answer arrived
    delUnknown: false, // its last delete had no answer (killed mid-delete): may be gone
    goneCycle: -1,     // found absent from disk after such a delete: that delete happened
    dcs: []            // DequeueCounts delivered (dropped once deleted: any delivery is then a violation)
  };
}

class Ledger {
  constructor() {
    this.recs = new Map();     // body -> record, for every send attempted (acked or not)
    this.bodyOf = new Map();   // MessageId -> body
    this.live = new Set();     // bodies acknowledged and not acknowledged-deleted
    this.reported = new Set(); // "kind body" already reported
    this.backlogOf = new Map();// queue -> live count (for back-pressure)
    this.violations = [];
    this.anomalies = [];       // unexpected but not a broken guarantee (e.g. an MNS error)
    this.counts = { sendsAcked: 0, deletesAcked: 0, receives: 0, redeliveries: 0, staleDeletes: 0,
                    unknownSends: 0, unknownDeletes: 0, seenAfterRestart: 0 };
  }

  violation(cycle, kind, detail) {
    this.violations.push({ cycle, kind, detail });
  }

  violationOnce(cycle, kind, body, detail) {
    const key = `${kind} ${body}`;
    if (this.reported.has(key)) return;
    this.reported.add(key);
    this.violation(cycle, kind, detail);
  }

  anomaly(cycle, kind, detail) {
    this.anomalies.push({ cycle, kind, detail });
  }

  backlog(queue) {
    return this.backlogOf.get(queue) || 0;
  }

  addBacklog(queue, delta) {
    this.backlogOf.set(queue, this.backlog(queue) + delta);
  }

  attempt(queue, bodies) {
    for (const b of bodies) this.recs.set(b, newRecord(queue));
  }

  // One id per body and one body per id, whoever reported it (send ack or receive).
  bindId(cycle, body, rec, id, source) {
    if (rec.id === undefined) rec.id = id;
    else if (rec.id !== id) {
      this.violation(cycle, 'id-changed', `${body}: ${source} says id ${id}, earlier ${rec.id}`);
    }
    const other = this.bodyOf.get(id);
    if (other === undefined) this.bodyOf.set(id, body);
    else if (other !== body) {
      this.violation(cycle, 'id-duplicated', `id ${id} names both ${other} and ${body} (${source})`);
    }
  }

  sendAcked(cycle, queue, body, id, md5) {
    const rec = this.recs.get(body);
    if (md5 !== md5Upper(body)) {
      this.violation(cycle, 'send-md5', `${body} (${id}): MessageBodyMD5 ${md5}`);
    }
    this.bindId(cycle, body, rec, id, 'send ack');
    rec.ackCycle = cycle;
    if (rec.delCycle < 0) {
      this.live.add(body);
      this.addBacklog(queue, 1);
    }
    this.counts.sendsAcked++;
  }

  // m: one <Message> of a receive; startedAt: when the receive request was issued.
  received(cycle, queue, m, startedAt, inDrain) {
    const body = m.MessageBody;
    const id = m.MessageId;
    const dc = Number(m.DequeueCount);
    const rec = this.recs.get(body);
    this.counts.receives++;
    if (!rec) {
      this.violation(cycle, 'unknown-message', `${queue} delivered ${JSON.stringify(body)} (${id}) that no one sent`);
      return;
    }
    if (rec.queue !== queue) {
      this.violation(cycle, 'wrong-queue', `${body} sent to ${rec.queue}, received from ${queue}`);
    }
    if (m.MessageBodyMD5 !== md5Upper(body)) {
      this.violation(cycle, 'receive-md5', `${body} (${id}): MessageBodyMD5 ${m.MessageBodyMD5}`);
    }
    this.bindId(cycle, body, rec, id, 'receive');
    this.checkNotDeleted(cycle, body, rec, id, dc, startedAt);
    if (rec.goneCycle >= 0) {
      this.violationOnce(cycle, 'resurrected', body,
        `${body} (${id}) delivered, but it was absent from disk after the kill of cycle ${rec.goneCycle}`);
    }
    this.checkDequeueCount(cycle, body, rec, id, dc);
    if (rec.seenCycle < 0) {
      rec.seenCycle = cycle;
      // First delivered in a later cycle than its acknowledgement: it crossed a SIGKILL.
      if (rec.ackCycle >= 0 && rec.ackCycle < cycle) this.counts.seenAfterRestart++;
    } else {
      this.counts.redeliveries++;
    }
    if (inDrain) rec.inDrain = true;
    // Delivered again, so whatever delete was in flight at the kill did not happen.
    rec.delUnknown = false;
  }

  // A delete acknowledged before this receive was issued, or made with the handle of an
  // earlier dequeue, means the message outlived an acknowledged delete.
  checkNotDeleted(cycle, body, rec, id, dc, startedAt) {
    if (rec.delCycle < 0) return;
    if (startedAt > rec.delAt || dc > rec.delDc) {
      this.violation(cycle, 'delete-came-back',
        `${body} (${id}) delivered with DequeueCount ${dc} after its delete (DequeueCount ${rec.delDc}) ` +
        `was acknowledged in cycle ${rec.delCycle}`);
    }
  }

  // Each receive commits DequeueCount + 1; seeing one value twice means an answered receive
  // was rolled back by the crash.
  checkDequeueCount(cycle, body, rec, id, dc) {
    if (rec.dcs.includes(dc)) {
      this.violation(cycle, 'receive-rolled-back', `${body} (${id}) delivered twice with DequeueCount ${dc}`);
    }
    rec.dcs.push(dc);
  }

  deleteAttempted(bodies) {
    for (const b of bodies) this.recs.get(b).delUnknown = true;
  }

  // The request failed without an answer: the delete may or may not have been committed.
  deleteUnanswered(bodies) {
    this.counts.unknownDeletes += bodies.length;
  }

  deleteRefused(bodies) {
    for (const b of bodies) this.recs.get(b).delUnknown = false;
  }

  deleteAcked(cycle, queue, m, ackAt) {
    const body = m.MessageBody;
    const dc = Number(m.DequeueCount);
    const rec = this.recs.get(body);
    rec.delUnknown = false;
    if (rec.delCycle >= 0) {
      this.violation(cycle, 'deleted-twice',
        `${body} (${m.MessageId}): delete acknowledged again (DequeueCount ${dc}), ` +
        `first in cycle ${rec.delCycle} (DequeueCount ${rec.delDc})`);
      return;
    }
    const later = rec.dcs.filter((x) => x > dc);
    if (later.length) {
      this.violation(cycle, 'stale-handle-deleted',
        `${body}: delete with the handle of DequeueCount ${dc} acknowledged, ` +
        `but it was delivered again with DequeueCount ${later.join(',')}`);
    }
    rec.delCycle = cycle;
    rec.delDc = dc;
    rec.delAt = ackAt;
    rec.dcs = [];
    if (this.live.delete(body)) this.addBacklog(queue, -1);
    this.counts.deletesAcked++;
  }

  // rows: [{queue, body}] read from a copy of the database right after SIGKILL.
  // -> the number of messages on disk.
  checkDisk(cycle, rows) {
    const onDisk = new Set();
    const perQueue = new Map();
    for (const r of rows) {
      perQueue.set(r.queue, (perQueue.get(r.queue) || 0) + 1);
      const rec = this.recs.get(r.body);
      if (onDisk.has(r.body)) this.violationOnce(cycle, 'duplicated-on-disk', r.body, `${r.body} stored twice`);
      onDisk.add(r.body);
      if (!rec) {
        this.violationOnce(cycle, 'unknown-on-disk', r.body,
          `${r.queue} holds ${JSON.stringify(r.body)} that no one sent`);
      } else if (rec.queue !== r.queue) {
        this.violationOnce(cycle, 'wrong-queue-on-disk', r.body, `${r.body} sent to ${rec.queue}, stored in ${r.queue}`);
      } else if (rec.delCycle >= 0) {
        this.violationOnce(cycle, 'delete-came-back', r.body,
          `${r.body} (${rec.id}) is on disk after its delete was acknowledged in cycle ${rec.delCycle}`);
      } else if (rec.goneCycle >= 0) {
        this.violationOnce(cycle, 'resurrected', r.body,
          `${r.body} (${rec.id}) is on disk, but it was absent after the kill of cycle ${rec.goneCycle}`);
      }
    }
    for (const body of this.live) {
      const rec = this.recs.get(body);
      if (onDisk.has(body)) continue;
      if (rec.delUnknown) {
        this.settleUnansweredDelete(cycle, body, rec);
        continue;
      }
      this.violationOnce(cycle, 'send-lost', body,
        `${body} (${rec.id}, acknowledged in cycle ${rec.ackCycle}) is not on disk and was never deleted`);
    }
    // Back-pressure follows the truth: unanswered deletes would otherwise inflate the backlog
    // a little every cycle until producers stall.
    for (const q of this.backlogOf.keys()) this.backlogOf.set(q, perQueue.get(q) || 0);
    return onDisk.size;
  }

  // Absent from disk, and its last delete was cut off by the kill: that delete was committed.
  // It leaves the live set; from now on it must never be seen again.
  settleUnansweredDelete(cycle, body, rec) {
    rec.goneCycle = cycle;
    rec.dcs = [];
    this.live.delete(body);
  }

  // After the final drain: everything acknowledged was delivered at some point, and whatever
  // was not deleted with an acknowledgement was delivered by the drain itself.
  checkFinal(cycle) {
    for (const [body, rec] of this.recs) {
      if (rec.ackCycle < 0) continue;
      if (rec.seenCycle < 0) {
        this.violationOnce(cycle, 'never-delivered', body,
          `${body} (${rec.id}, acknowledged in cycle ${rec.ackCycle}) was never delivered`);
      } else if (rec.delCycle < 0 && rec.goneCycle < 0 && !rec.inDrain && !rec.delUnknown) {
        this.violationOnce(cycle, 'not-drained', body,
          `${body} (${rec.id}, acknowledged in cycle ${rec.ackCycle}) was not deleted but the final drain did not deliver it`);
      }
    }
  }
}

module.exports = { Ledger, md5Upper };
