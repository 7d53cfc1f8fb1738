// ABI v1.6 on the edge host: a stream batch a layer hands back untouched
// comes back as the very array passed in (not decoded again), a watching
// layer says so in its descriptor, and a layer that has nothing to do with
// a request's answer says so in its result. Build first: `make plugins`
// (build/plugins/hashcache.wasm, pii.wasm).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { PluginHost } from '../host/bardo-host.mjs';
import { nodeWasi } from '../host/node-wasi.mjs';
import * as wire from '../host/wire.mjs';

const load = (name) => PluginHost.load(readFileSync(new URL(`../../build/plugins/${name}.wasm`, import.meta.url)),
  { wasi: nodeWasi(), logger: () => {}, clock: () => BigInt(Date.UTC(2025, 0, 1)) * 1_000_000n });
const meta = { tenant: 't1', requestID: 'r1', dialect: wire.Dialect.OpenAI };

test('hashcache watches streams, and hands an untouched batch back unchanged', async () => {
  const hc = await load('hashcache');
  assert.equal((await hc.describe()).flags & wire.Flag.WatchStream, wire.Flag.WatchStream);
  const events = [
    { type: wire.EventType.MessageStart, id: 'm1', model: 'gpt-x' },
    { type: wire.EventType.Delta, delta: wire.DeltaKind.Text, text: 'hello' },
  ];
  const res = await hc.onStream({ meta, events, final: false });
  assert.equal(res.unchanged, true);
  assert.equal(res.events, events);
});

test('pii skips the answer phases of a request in which it masked nothing', async () => {
  const pii = await load('pii');
  const req = (text) => ({ meta, request: { model: 'gpt-x', messages: [{ role: 'user', content: [{ type: wire.BlockType.Text, text }] }] } });
  assert.equal((await pii.onRequest(req('summarise the release notes'))).skipAnswer, true);
  assert.equal((await pii.onRequest(req('write to alice@example.com'))).skipAnswer, false);
});
