'use strict';
// topic.js — the publish side of one crash cycle (docs/protocol.md §13.5, §13.8-§13.12): a topic
// with three queue subscriptions, one per NotifyContentFormat, a late one (below) and two HTTP
// subscriptions, a publisher using the SDK's publishMessage, and one consumer per subscribed
// queue.  What the clients were told goes to a PublishLedger (publish_ledger.js).
//
// Two HTTP subscriptions, h-xml (XML, BACKOFF_RETRY) and h-simple (SIMPLIFIED,
// EXPONENTIAL_DECAY_RETRY), push to the harness's loopback endpoint (push_endpoint.js), which
// verifies every push's signature and answers 500 to the first push of some publishes.
//
// A fourth subscription, s-late, names a queue that exists only from cycle 1 on, with
// EXPONENTIAL_DECAY_RETRY (§13.12): the notifications of cycle 0's publishes fail, wait on
// disk with their retry schedule across one or more kills, and must be delivered once the
// queue exists.  The others are delivered in the engine run that commits the publish, so a
// kill would almost never find them pending.
//
// The Node SDK has no subscribe call (its subscribe() is an empty stub), so the subscriptions
// are made with the SDK's own signed request, as tests/integration/node/topic.test.js does.

const crypto = require('crypto');
const traffic = require('./traffic.js');
const { PublishLedger } = require('./publish_ledger.js');

const TOPIC = 'cl-topic';
const SUBS = [
  { name: 's-simple', queue: 'cl-t-simple', format: 'SIMPLIFIED' },
  { name: 's-json', queue: 'cl-t-json', format: 'JSON' },
  { name: 's-xml', queue: 'cl-t-xml', format: 'XML' },
  { name: 's-late', queue: 'cl-t-late', format: 'SIMPLIFIED', late: true, strategy: 'EXPONENTIAL_DECAY_RETRY' },
  // HTTP subscriptions to the harness's endpoint (push_endpoint.js), path /<name>.  h-simple's
  // endpoint answers 500 to the first push of one publish in FAIL_FIRST_OF: retried 1 s later
  // on EXPONENTIAL_DECAY_RETRY (§13.12).  h-xml (BACKOFF_RETRY, whose retries come 10-20 s
  // apart) is never failed on purpose, and answered 201: any 2xx is a success (§13.10).
  { name: 'h-xml', format: 'XML', http: true, okStatus: 201 },
  { name: 'h-simple', format: 'SIMPLIFIED', http: true, okStatus: 204, strategy: 'EXPONENTIAL_DECAY_RETRY',
    failFirst: true }
];
const FAIL_FIRST_OF = 8;
const BATCH = 16;
const MAX_BACKLOG = 1500;          // (subscription, publish) pairs owed a delivery: publishers pause
const ABANDON_P = 0.05;            // share of received copies left to time out
const TAGS = ['', '', 'red', 'blue-green'];

function newLedger(ledger) {
  return new PublishLedger(TOPIC, SUBS, ledger);
}

// Whether the endpoint answers 500 to the first push of this body to subscription name: one
// publish in FAIL_FIRST_OF, picked by the body (not the run's rng, which the scheduler would
// reorder) so a seed fails the same publishes.
function failFirst(name, body) {
  const s = SUBS.find((x) => x.name === name);
  return Boolean(s && s.failFirst) && crypto.createHash('md5').update(body).digest()[0] % FAIL_FIRST_OF === 0;
}

// endpoint: the harness's push endpoint (push_endpoint.js), for the HTTP subscriptions.
async function setup(mns, endpoint) {
  for (const s of SUBS) if (!s.late && !s.http) await mns.createQueue(s.queue, traffic.QUEUE_ATTRS);
  await mns.createTopic(TOPIC);
  for (const s of SUBS) {
    const target = s.http ? endpoint.url(`/${s.name}`) : `acs:mns:cn-hangzhou:1:queues/${s.queue}`;
    const body = '<?xml version="1.0" encoding="UTF-8"?><Subscription xmlns="http://mns.aliyuncs.com/doc/v1/">' +
      `<Endpoint>${target}</Endpoint>` +
      (s.strategy ? `<NotifyStrategy>${s.strategy}</NotifyStrategy>` : '') +
      `<NotifyContentFormat>${s.format}</NotifyContentFormat></Subscription>`;
    await mns.put(`/topics/${TOPIC}/subscriptions/${s.name}`, 'Subscription', body, ['location']);
  }
}

// The queue of s-late, from cycle 1 on (and before the final drain); 204 when it exists.
async function createLateQueues(mns) {
  for (const s of SUBS) if (s.late) await mns.createQueue(s.queue, traffic.QUEUE_ATTRS);
}

async function publish(ctx, book, body, tag) {
  const { mns, ledger, cycle } = ctx;
  book.attempt(body, tag);
  const params = tag ? { MessageBody: body, MessageTag: tag } : { MessageBody: body };
  let r;
  try {
    r = await traffic.tracked(ctx, { kind: 'publish', batch: false }, () => mns.publishMessage(TOPIC, params));
  } catch (e) {
    book.counts.unknownPublishes++;
    if (traffic.mnsAnomaly(ctx, e)) ledger.anomaly(cycle, 'publish-error', `${TOPIC}: ${e.name}: ${e.message}`);
    else traffic.transportFailure(ctx, 'publish', e);
    return;
  }
  if (r.code !== 201 || !r.body || !r.body.MessageId) {
    ledger.anomaly(cycle, 'publish-answer', `${TOPIC}: HTTP ${r.code}, ${JSON.stringify(r.body)}`);
    return;
  }
  book.publishAcked(cycle, body, r.body.MessageId, r.body.MessageBodyMD5);
}

async function publisher(ctx, book, p) {
  for (let n = 0; !ctx.dead;) {
    if (book.backlog() > MAX_BACKLOG) {
      await traffic.sleep(20);
      continue;
    }
    await publish(ctx, book, `c${ctx.cycle}-t${p}-${n++}`, traffic.pick(ctx.rng, TAGS));
  }
}

// One ReceiveMessage or BatchReceiveMessage on a subscribed queue; -> messages ([] when none).
async function receive(ctx, book, queue, n, wait) {
  const { mns, ledger, cycle } = ctx;
  let startedAt = 0;
  try {
    const r = await traffic.tracked(ctx, { kind: n > 1 ? 'batchReceive' : 'receive', batch: n > 1, wait }, (t) => {
      startedAt = t;
      return n > 1 ? mns.batchReceiveMessage(queue, n, wait) : mns.receiveMessage(queue, wait);
    });
    const msgs = n > 1 ? r.body : [r.body];
    if (!Array.isArray(msgs) || !msgs.every((m) => m && typeof m.MessageBody === 'string')) {
      ledger.anomaly(cycle, 'receive-answer', `${queue}: HTTP ${r.code}, ${JSON.stringify(r.body)}`);
      return [];
    }
    for (const m of msgs) book.received(cycle, queue, m, startedAt, ctx.inDrain);
    // An unknown or malformed notification has no copy to delete: leave it (it is a violation).
    return msgs.filter((m) => book.copyOf(m) !== undefined);
  } catch (e) {
    if (e.name === 'MNSMessageNotExistError') return [];
    if (traffic.mnsAnomaly(ctx, e)) ledger.anomaly(cycle, 'receive-error', `${queue}: ${e.name}: ${e.message}`);
    else traffic.transportFailure(ctx, 'receive', e);
    return [];
  }
}

// BatchDeleteMessage: 204 deletes all, 404 <Errors> lists the handles that were not deleted.
async function deleteCopies(ctx, book, queue, msgs) {
  const { mns, ledger, cycle } = ctx;
  if (msgs.length === 0) return;
  book.deleteAttempted(msgs);
  let r;
  try {
    r = await traffic.tracked(ctx, { kind: 'batchDelete', batch: true },
      () => mns.batchDeleteMessage(queue, msgs.map((m) => m.ReceiptHandle)));
  } catch (e) {
    if (traffic.mnsAnomaly(ctx, e)) {
      book.deleteRefused(msgs);
      ledger.anomaly(cycle, 'delete-error', `${queue}: ${e.name}: ${e.message}`);
    } else {
      traffic.transportFailure(ctx, 'batch delete', e);
    }
    return;
  }
  const at = traffic.now();
  const failed = new Map();
  if (r.code === 404 && Array.isArray(r.body)) {
    for (const err of r.body) failed.set(err.ReceiptHandle, err.ErrorCode);
  } else if (r.code !== 204) {
    ledger.anomaly(cycle, 'delete-answer', `${queue}: HTTP ${r.code}, ${JSON.stringify(r.body)}`);
    return;
  }
  for (const m of msgs) {
    const code = failed.get(m.ReceiptHandle);
    if (code === undefined) book.deleteAcked(cycle, m, at);
    else {
      book.deleteRefused([m]);
      // A stale handle is legitimate (its visibility timed out); anything else is worth a look.
      if (code !== 'MessageNotExist' && code !== 'ReceiptHandleError') ledger.anomaly(cycle, 'delete-error', `${queue}: ${code}`);
    }
  }
}

async function consumer(ctx, book, queue) {
  while (!ctx.dead) {
    const msgs = await receive(ctx, book, queue, ctx.rng() < 0.8 ? BATCH : 1, traffic.pick(ctx.rng, [0, 1]));
    await deleteCopies(ctx, book, queue, msgs.filter(() => ctx.rng() >= ABANDON_P));
  }
}

// -> promises of every loop; they resolve once ctx.dead is set and their request failed.
function start(ctx, book, publishers) {
  if (publishers === 0) return [];
  const loops = [];
  for (let p = 0; p < publishers; p++) loops.push(publisher(ctx, book, p));
  for (const s of SUBS) if (!s.http && (!s.late || ctx.cycle > 0)) loops.push(consumer(ctx, book, s.queue));
  return loops;
}

// Receives and deletes until the subscribed queues are empty and the topic keeps no message
// (MessageCount 0: no notification pending, §13.2) for two rounds in a row.  The HTTP
// subscriptions' pushes drain meanwhile: what was pending at the last kill goes out right
// after the restart, a first push failed on purpose is retried 1 s later (§13.12), so the
// deadline (60 s) is far above what they need.
async function drain(ctx, book, deadlineMs) {
  const end = traffic.now() + deadlineMs;
  for (let emptyRounds = 0; emptyRounds < 2;) {
    if (traffic.now() > end) {
      throw new Error(`final drain did not empty the subscribed queues and the topic within ${deadlineMs} ms ` +
        `(${book.backlog()} deliveries or pushes still owed)`);
    }
    let got = 0;
    for (const s of SUBS) {
      if (s.http) continue;
      for (let msgs; (msgs = await receive(ctx, book, s.queue, BATCH, 0)).length > 0;) {
        got += msgs.length;
        await deleteCopies(ctx, book, s.queue, msgs);
      }
    }
    if (got === 0 && await allEmpty(ctx)) emptyRounds++;
    else if (got === 0) await traffic.sleep(250);
    else emptyRounds = 0;
  }
}

async function allEmpty(ctx) {
  const t = (await ctx.mns.getTopicAttributes(TOPIC)).body;
  if (t.MessageCount !== '0') return false;
  for (const s of SUBS) {
    if (s.http) continue;
    const a = (await ctx.mns.getQueueAttributes(s.queue)).body;
    if (a.ActiveMessages !== '0' || a.InactiveMessages !== '0' || a.DelayMessages !== '0') return false;
  }
  return true;
}

module.exports = { TOPIC, SUBS, newLedger, setup, createLateQueues, start, drain, failFirst };
