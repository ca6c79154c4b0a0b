'use strict';
// publish_ledger.js — what the publishers were told, and what every subscribed queue must hold
// because of it (docs/protocol.md §13.8, §13.9).
//
// A publish counts as acknowledged when its 201 arrived.  Every published body is unique in the
// run, so a body names one publish; each subscription turns it into one or more queue messages
// ("copies", each with its own queue MessageId).  At least once: a second copy of one publish in
// one subscription is allowed, and counted.  What must never happen is an acknowledged publish
// that, after a kill, is neither pending as a notification, nor in the subscribed queue, nor was
// ever delivered from it: that publish was lost for that subscription.
//
// Copies are queue messages like any other: an answered receive is not rolled back (DequeueCount
// seen twice), an acknowledged delete does not come back, a received copy that was not deleted is
// still on disk.  Violations and anomalies go to the run's Ledger (ledger.js), so they are counted
// and printed with everything else.
//
// HTTP subscriptions (§13.10, §13.12) have no queue: a publish reaches one when the endpoint
// answered one of its pushes with a 2xx.  A push answered otherwise (the endpoint's 500 on
// purpose) is a failed attempt: the notification must stay pending until a retry gets its 2xx.
// A push after a 2xx is a duplicate (at least once: allowed, counted).  So after a kill, an
// acknowledged publish is either pending for the HTTP subscription or was pushed with a 2xx;
// otherwise it was lost for it, as for a queue.

const { md5Upper } = require('./ledger.js');

const NS = 'http://mns.aliyuncs.com/doc/v1/';
const XML_ENTITIES = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

function xmlText(s) {
  return s.replace(/&(lt|gt|amp|quot|apos);/g, (_, e) => XML_ENTITIES[e]);
}

function xmlElem(doc, name) {
  const m = doc.match(new RegExp(`<${name}>([^<]*)</${name}>`));
  return m ? xmlText(m[1]) : undefined;
}

// The queue message body of one notification, per NotifyContentFormat (§13.9).
// -> {body, id, md5, topic, sub, tag} (only body for SIMPLIFIED), or null when malformed.
function decode(format, text) {
  if (format === 'SIMPLIFIED') return { body: text };
  if (format === 'JSON') {
    let o;
    try {
      o = JSON.parse(text);
    } catch (e) {
      return null;
    }
    if (!o || typeof o.Message !== 'string' || typeof o.PublishTime !== 'number') return null;
    return { body: o.Message, id: o.MessageId, md5: o.MessageMD5, topic: o.TopicName,
             sub: o.SubscriptionName, tag: o.MessageTag };
  }
  if (!text.startsWith(`<?xml version="1.0" encoding="UTF-8"?><Notification xmlns="${NS}">`) ||
      !text.endsWith('</Notification>')) return null;
  const body = xmlElem(text, 'Message');
  if (body === undefined || xmlElem(text, 'PublishTime') === undefined) return null;
  return { body, id: xmlElem(text, 'MessageId'), md5: xmlElem(text, 'MessageMD5'), topic: xmlElem(text, 'TopicName'),
           sub: xmlElem(text, 'SubscriptionName'), tag: xmlElem(text, 'MessageTag') };
}

function newPublish(tag, nSubs) {
  return {
    tag,               // MessageTag sent ('' = none)
    pushed: new Map(), // HTTP subscription -> {n: pushes received, ok: answered 2xx}
    id: undefined,     // the publish's MessageId (its 201, or the first XML/JSON notification)
    ackCycle: -1,      // cycle of the 201
    unseen: nSubs,     // subscriptions not yet delivered from
    seen: new Map(),   // subscription -> cycle of its first delivery
    copies: []         // every copy received, all subscriptions
  };
}

function newCopy(sub, body) {
  return { sub, body, dcs: [], delCycle: -1, delDc: 0, delAt: 0, delUnknown: false, goneCycle: -1, inDrain: false };
}

class PublishLedger {
  // subs: [{name, queue, format}] for queue subscriptions, [{name, format, http: true,
  // okStatus}] for HTTP ones; ledger: the run's Ledger (violations, anomalies).
  constructor(topic, subs, ledger) {
    this.topic = topic;
    this.subs = subs;
    this.subOfQueue = new Map(subs.filter((s) => !s.http).map((s) => [s.queue, s]));
    this.subOfName = new Map(subs.map((s) => [s.name, s]));
    this.ledger = ledger;
    this.pubs = new Map();     // published body -> record, for every publish attempted
    this.open = new Set();     // acknowledged bodies not yet delivered from every subscription,
                               // or with a copy neither acknowledged-deleted nor gone
    this.copies = new Map();   // queue MessageId -> copy
    this.ids = new Map();      // MessageId (publish or copy) -> what it names
    this.counts = { publishesAcked: 0, unknownPublishes: 0, copiesReceived: 0, duplicates: 0,
                    redeliveries: 0, copyDeletesAcked: 0, seenAfterRestart: 0, doubledOnDisk: 0,
                    pendingAfterKill: 0, pushes: 0, pushesFailedOnPurpose: 0, pushRetries: 0,
                    pushDuplicates: 0 };
  }

  isSubQueue(queue) {
    return this.subOfQueue.has(queue);
  }

  // (subscription, publish) pairs still owed a first delivery: the publishers' back-pressure.
  backlog() {
    let n = 0;
    for (const body of this.open) n += this.pubs.get(body).unseen;
    return n;
  }

  bindId(cycle, id, what) {
    const other = this.ids.get(id);
    if (other === undefined) this.ids.set(id, what);
    else if (other !== what) this.ledger.violation(cycle, 'id-duplicated', `id ${id} names both ${other} and ${what}`);
  }

  attempt(body, tag) {
    this.pubs.set(body, newPublish(tag, this.subs.length));
  }

  publishAcked(cycle, body, id, md5) {
    const p = this.pubs.get(body);
    if (md5 !== md5Upper(body)) this.ledger.violation(cycle, 'publish-md5', `${body} (${id}): MessageBodyMD5 ${md5}`);
    this.bindPublishId(cycle, body, p, id, 'publish ack');
    p.ackCycle = cycle;
    if (p.unseen > 0) this.open.add(body);
    this.counts.publishesAcked++;
  }

  bindPublishId(cycle, body, p, id, source) {
    if (p.id === undefined) {
      p.id = id;
      this.bindId(cycle, id, `publish ${body}`);
    } else if (p.id !== id) {
      this.ledger.violation(cycle, 'id-changed', `publish ${body}: ${source} says id ${id}, earlier ${p.id}`);
    }
  }

  // What an XML or JSON notification says of its publish (SIMPLIFIED carries only the body).
  checkNotification(cycle, sub, dec, p) {
    const bad = [];
    if (dec.topic !== this.topic) bad.push(`TopicName ${dec.topic}`);
    if (dec.sub !== sub.name) bad.push(`SubscriptionName ${dec.sub}`);
    if (dec.md5 !== md5Upper(dec.body)) bad.push(`MessageMD5 ${dec.md5}`);
    if ((dec.tag || '') !== p.tag) bad.push(`MessageTag ${dec.tag} (published ${JSON.stringify(p.tag)})`);
    if (bad.length) this.ledger.violation(cycle, 'notification', `${sub.name} ${dec.body}: ${bad.join(', ')}`);
    if (dec.id === undefined) this.ledger.violation(cycle, 'notification', `${sub.name} ${dec.body}: no MessageId`);
    else this.bindPublishId(cycle, dec.body, p, dec.id, `${sub.name} notification`);
  }

  // m: one <Message> of a receive from a subscribed queue; startedAt: when the receive was issued.
  received(cycle, queue, m, startedAt, inDrain) {
    const sub = this.subOfQueue.get(queue);
    const dc = Number(m.DequeueCount);
    if (m.MessageBodyMD5 !== md5Upper(m.MessageBody)) {
      this.ledger.violation(cycle, 'receive-md5', `${queue} (${m.MessageId}): MessageBodyMD5 ${m.MessageBodyMD5}`);
    }
    const dec = decode(sub.format, m.MessageBody);
    const p = dec && this.pubs.get(dec.body);
    if (!p) {
      this.ledger.violation(cycle, dec ? 'unknown-notification' : 'bad-notification',
        `${queue} delivered ${JSON.stringify(m.MessageBody).slice(0, 300)} (${m.MessageId})`);
      return;
    }
    if (sub.format !== 'SIMPLIFIED') this.checkNotification(cycle, sub, dec, p);
    this.counts.copiesReceived++;
    let copy = this.copies.get(m.MessageId);
    if (copy === undefined) {
      copy = newCopy(sub.name, dec.body);
      this.copies.set(m.MessageId, copy);
      p.copies.push(copy);
      this.bindId(cycle, m.MessageId, `${sub.name} copy of ${dec.body}`);
      if (p.seen.has(sub.name)) this.counts.duplicates++;
    } else {
      if (copy.sub !== sub.name || copy.body !== dec.body) {
        this.ledger.violation(cycle, 'id-duplicated', `${queue} id ${m.MessageId} names ${dec.body} and ${copy.sub} ${copy.body}`);
        return;
      }
      this.counts.redeliveries++;
    }
    this.checkCopy(cycle, m, copy, dc, startedAt);
    this.markSeen(cycle, p, sub.name);
    if (inDrain) copy.inDrain = true;
    copy.delUnknown = false;   // delivered again: a delete in flight at the kill did not happen
  }

  markSeen(cycle, p, name) {
    if (p.seen.has(name)) return;
    p.seen.set(name, cycle);
    p.unseen--;
    // First delivered in a later cycle than its acknowledgement: it crossed a SIGKILL.
    if (p.ackCycle >= 0 && p.ackCycle < cycle) this.counts.seenAfterRestart++;
  }

  // One push the endpoint received and verified (§13.10, §13.11): name is the subscription its
  // path names, h its headers (lower-case names -> value), text its body.  failFirst: the
  // endpoint wants this publish's first push to that subscription answered 500 (a retry must
  // follow, §13.12).  -> the status to answer: 500 then, else the subscription's 2xx.
  pushed(cycle, name, h, text, failFirst) {
    const sub = this.subOfName.get(name);
    if (!sub || !sub.http) {
      this.ledger.violation(cycle, 'unknown-push', `a push for ${name}, not an HTTP subscription of ${this.topic}`);
      return 204;
    }
    this.counts.pushes++;
    const dec = decode(sub.format, text);
    const p = dec && this.pubs.get(dec.body);
    if (!p) {
      this.ledger.violation(cycle, dec ? 'unknown-push' : 'bad-push', `${name} got ${JSON.stringify(text).slice(0, 300)}`);
      return 204;
    }
    this.checkPush(cycle, sub, h, dec, p);
    const rec = p.pushed.get(name) || { n: 0, ok: false };
    p.pushed.set(name, rec);
    rec.n++;
    if (rec.ok) this.counts.pushDuplicates++;
    else if (rec.n > 1) this.counts.pushRetries++;
    if (rec.n === 1 && failFirst) {
      this.counts.pushesFailedOnPurpose++;
      return 500;
    }
    rec.ok = true;
    this.markSeen(cycle, p, name);
    return sub.okStatus || 204;
  }

  // What a push's headers (and an XML body) say of its publish: §13.10's table.
  checkPush(cycle, sub, h, dec, p) {
    const bad = [];
    if (h.get('x-mns-topic-name') !== this.topic) bad.push(`x-mns-topic-name ${h.get('x-mns-topic-name')}`);
    if (h.get('x-mns-subscription-name') !== sub.name) bad.push(`x-mns-subscription-name ${h.get('x-mns-subscription-name')}`);
    if (sub.format === 'SIMPLIFIED' && (h.get('x-mns-message-tag') || '') !== p.tag) {
      bad.push(`x-mns-message-tag ${h.get('x-mns-message-tag')} (published ${JSON.stringify(p.tag)})`);
    }
    if (bad.length) this.ledger.violation(cycle, 'push-headers', `${sub.name} ${dec.body}: ${bad.join(', ')}`);
    if (sub.format !== 'SIMPLIFIED') this.checkNotification(cycle, sub, dec, p);
    else if (!h.get('x-mns-message-id')) this.ledger.violation(cycle, 'push-headers', `${sub.name} ${dec.body}: no x-mns-message-id`);
    else this.bindPublishId(cycle, dec.body, p, h.get('x-mns-message-id'), `${sub.name} push`);
  }

  // The queue guarantees, per copy (ledger.js checks the same for sent messages).
  checkCopy(cycle, m, copy, dc, startedAt) {
    const what = `${copy.sub} copy of ${copy.body} (${m.MessageId})`;
    if (copy.delCycle >= 0 && (startedAt > copy.delAt || dc > copy.delDc)) {
      this.ledger.violation(cycle, 'delete-came-back',
        `${what} delivered with DequeueCount ${dc} after its delete was acknowledged in cycle ${copy.delCycle}`);
    }
    if (copy.goneCycle >= 0) {
      this.ledger.violation(cycle, 'resurrected', `${what} delivered, but it was absent after the kill of cycle ${copy.goneCycle}`);
    }
    if (copy.dcs.includes(dc)) {
      this.ledger.violation(cycle, 'receive-rolled-back', `${what} delivered twice with DequeueCount ${dc}`);
    }
    copy.dcs.push(dc);
  }

  copyOf(m) {
    return this.copies.get(m.MessageId);
  }

  deleteAttempted(msgs) {
    for (const m of msgs) this.copyOf(m).delUnknown = true;
  }

  deleteRefused(msgs) {
    for (const m of msgs) this.copyOf(m).delUnknown = false;
  }

  deleteAcked(cycle, m, ackAt) {
    const copy = this.copyOf(m);
    const dc = Number(m.DequeueCount);
    copy.delUnknown = false;
    if (copy.delCycle >= 0) {
      this.ledger.violation(cycle, 'deleted-twice', `${copy.sub} copy of ${copy.body} (${m.MessageId}): delete acknowledged again`);
      return;
    }
    const later = copy.dcs.filter((x) => x > dc);
    if (later.length) {
      this.ledger.violation(cycle, 'stale-handle-deleted', `${copy.sub} copy of ${copy.body}: delete with the handle of ` +
        `DequeueCount ${dc} acknowledged, but it was delivered again with DequeueCount ${later.join(',')}`);
    }
    copy.delCycle = cycle;
    copy.delDc = dc;
    copy.delAt = ackAt;
    this.counts.copyDeletesAcked++;
  }

  // After a kill, from a copy of the database:
  //   queueRows: [{queue, body}] of the subscribed queues (the stored notification text);
  //   notifRows: [{sub, body}] pending notifications with their published body ('' if none).
  // -> the number of rows read (queue messages + pending notifications).
  checkDisk(cycle, queueRows, notifRows) {
    const inQueue = this.readQueueRows(cycle, queueRows);
    const pending = this.readNotifRows(cycle, notifRows);
    this.counts.pendingAfterKill += pending.size;
    for (const key of pending) if (inQueue.has(key)) this.counts.doubledOnDisk++;
    for (const body of this.open) this.checkOpen(cycle, body, inQueue, pending);
    return queueRows.length + notifRows.length;
  }

  readQueueRows(cycle, rows) {
    const inQueue = new Set();
    for (const r of rows) {
      const sub = this.subOfQueue.get(r.queue);
      const dec = decode(sub.format, r.body);
      if (!dec) {
        this.ledger.violationOnce(cycle, 'bad-notification', r.body, `${r.queue} holds ${JSON.stringify(r.body).slice(0, 300)}`);
      } else if (!this.pubs.has(dec.body)) {
        this.ledger.violationOnce(cycle, 'unknown-on-disk', r.body, `${r.queue} holds a notification of ${dec.body}, never published`);
      } else {
        inQueue.add(`${sub.name} ${dec.body}`);
      }
    }
    return inQueue;
  }

  readNotifRows(cycle, rows) {
    const pending = new Set();
    for (const r of rows) {
      if (r.body === '') this.ledger.violation(cycle, 'torn-row', `a pending notification of ${r.sub} has no published body`);
      else if (!this.pubs.has(r.body)) this.ledger.violationOnce(cycle, 'unknown-on-disk', r.body, `${r.sub} has ${r.body} pending, never published`);
      else pending.add(`${r.sub} ${r.body}`);
    }
    return pending;
  }

  // One acknowledged publish, subscription by subscription: pending, or in the queue, or
  // delivered; and each delivered copy not deleted is still there.
  checkOpen(cycle, body, inQueue, pending) {
    const p = this.pubs.get(body);
    let done = true;
    for (const sub of this.subs) {
      const key = `${sub.name} ${body}`;
      const live = p.copies.filter((c) => c.sub === sub.name && c.delCycle < 0 && c.goneCycle < 0);
      if (!p.seen.has(sub.name)) done = false;
      if (pending.has(key) || inQueue.has(key)) {
        if (live.length) done = false;
        continue;
      }
      if (!p.seen.has(sub.name)) {
        this.ledger.violationOnce(cycle, 'publish-lost', key, `${body} (${p.id}, acknowledged in cycle ${p.ackCycle}) ` +
          `is neither pending for ${sub.name}, nor ` + (sub.http ? 'was a push of it answered 2xx' :
            `in ${sub.queue}, nor was it ever delivered from there`));
        continue;
      }
      for (const copy of live) {
        if (copy.delUnknown) copy.goneCycle = cycle;   // its cut-off delete took effect
        else this.ledger.violationOnce(cycle, 'copy-lost', key, `${sub.name} copy of ${body} was received, not deleted, and is not on disk`);
      }
    }
    if (done) this.open.delete(body);
  }

  // After the final drain: every acknowledged publish was delivered from every subscription.
  checkFinal(cycle) {
    for (const [body, p] of this.pubs) {
      if (p.ackCycle < 0) continue;
      for (const sub of this.subs) {
        if (!p.seen.has(sub.name)) {
          this.ledger.violationOnce(cycle, 'publish-never-delivered', `${sub.name} ${body}`,
            `${body} (${p.id}, acknowledged in cycle ${p.ackCycle}) never reached ` +
            (sub.http ? `${sub.name}'s endpoint with a 2xx answer` : sub.queue));
        }
      }
    }
  }
}

module.exports = { PublishLedger, decode };
