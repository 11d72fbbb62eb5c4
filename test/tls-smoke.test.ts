import assert from 'node:assert/strict';
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { outboundRequest } from '../src/net/outbound.js';

test('the test CA is trusted through NODE_EXTRA_CA_CERTS, by IP and by name', async () => {
  const cert = process.env.TEST_TLS_CERT_FILE;
  const key = process.env.TEST_TLS_KEY_FILE;
  assert.ok(cert && key, 'run through npm test');
  const srv = https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, (_req, res) => res.end('ok'));
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  try {
    for (const host of ['127.0.0.1', 'localhost']) {
      const res = await outboundRequest(`https://${host}:${port}/`, { allowPrivate: true, timeoutMs: 5000, maxBytes: 100, maxRedirects: 0 });
      assert.equal(res.status, 200);
      assert.equal(res.body.toString(), 'ok');
    }
  } finally {
    srv.close();
  }
});
