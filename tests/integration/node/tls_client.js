// tls_client.js — the official Node SDK against smqd over HTTPS, as a user with a private CA
// sets it up: NODE_EXTRA_CA_CERTS names the CA, the endpoint is https://. Run by
// test_tls.sh: node tls_client.js ENDPOINT QUEUE; prints one JSON line of what it saw.
'use strict';
const Client = require('@alicloud/mns');

async function main() {
  const [endpoint, queue] = process.argv.slice(2);
  const mns = new Client('1234567890123456', {
    endpoint, accessKeyId: 'testAccessKeyId', accessKeySecret: 'testAccessKeySecret'
  });
  const created = await mns.createQueue(queue);
  const sent = await mns.sendMessage(queue, { MessageBody: 'over tls' });
  const got = await mns.receiveMessage(queue, 5);
  const deleted = await mns.deleteMessage(queue, got.body.ReceiptHandle);
  console.log(JSON.stringify({
    created: created.code, location: created.headers.location, sent: sent.code,
    body: got.body.MessageBody, sameId: got.body.MessageId === sent.body.MessageId,
    deleted: deleted.code
  }));
}

main().catch((err) => { console.log(JSON.stringify({ error: String(err && err.message || err) })); process.exit(1); });
