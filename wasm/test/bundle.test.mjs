// A bundle (ABI v1.5: one module, several plugins) on the edge host: each
// PluginHost runs the entry it names, and answers as that plugin's own
// module does. Build first: `make plugins` (build/plugins/layers.wasm, pii.wasm,
// hashcache.wasm).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { PluginHost, PluginError } from '../host/bardo-host.mjs';
import { nodeWasi } from '../host/node-wasi.mjs';
import * as wire from '../host/wire.mjs';

const compile = (name) => WebAssembly.compile(readFileSync(new URL(`../../build/plugins/${name}.wasm`, import.meta.url)));
let bundle;
before(async () => { bundle = await compile('layers'); });

const quiet = { wasi: nodeWasi(), logger: () => {}, clock: () => BigInt(Date.UTC(2025, 0, 1)) * 1_000_000n };
const req = (text) => ({
  meta: { tenant: 't1', requestID: 'r1', dialect: wire.Dialect.OpenAI },
  request: { model: 'gpt-x', messages: [{ role: 'user', content: [{ type: wire.BlockType.Text, text }] }] },
});

for (const entry of ['pii', 'hashcache']) {
  test(`layers.wasm entry ${entry} describes and answers as ${entry}.wasm`, async () => {
    const own = await PluginHost.load(await compile(entry), { ...quiet, wasi: nodeWasi() });
    const bundled = await PluginHost.load(bundle, { ...quiet, wasi: nodeWasi(), entry });
    assert.deepEqual(await bundled.describe(), await own.describe());
    assert.equal(bundled.name, entry);
    const text = 'mail alice@example.com the key sk-abcdefghijklmnopqrstuvwx please';
    const [a, b] = [await bundled.onRequest(req(text)), await own.onRequest(req(text))];
    if (entry === 'pii') {
      // pii keys its placeholders with a random per-instance secret: the same
      // shape, not the same bytes.
      const shape = (r) => ({ patched: r.patched, keys: r.annotations.map((x) => x.key), masked: !JSON.stringify(r.request).includes('alice@example.com') });
      assert.deepEqual(shape(a), shape(b));
      assert.equal(shape(a).masked, true);
    } else {
      assert.deepEqual(a, b);
    }
  });
}

test('layers.wasm: two entries share one compiled module, each on its own instance', async () => {
  const pii = await PluginHost.load(bundle, { ...quiet, wasi: nodeWasi(), entry: 'pii' });
  const hc = await PluginHost.load(bundle, { ...quiet, wasi: nodeWasi(), entry: 'hashcache' });
  assert.equal((await pii.describe()).name, 'pii');
  assert.equal((await hc.describe()).name, 'hashcache');
  await pii.onRequest(req('hello'));
  assert.equal((await hc.describe()).name, 'hashcache'); // pii's calls did not move hc's selection
});

test('layers.wasm: without an entry the name picks it; an unknown one is refused naming the rest', async () => {
  const byName = await PluginHost.load(bundle, { ...quiet, wasi: nodeWasi(), name: 'injection' });
  assert.equal((await byName.describe()).name, 'injection');
  await assert.rejects(PluginHost.load(bundle, { ...quiet, wasi: nodeWasi(), entry: 'nope' }),
    (err) => err instanceof PluginError && /has no plugin "nope" \(it has .*pii.*\)/.test(err.message));
});
