// PluginHost against the real hostcalls plugin, which calls every bardo_v1 host
// function. Build it first (see wasm/README.md):
//   GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -ldflags=-s \
//     -o build/plugins/hostcalls.wasm ./testplugins/hostcalls
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, openSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PluginHost, PluginError, PluginTrap, MemoryKV, applyPatch } from '../host/bardo-host.mjs';
import { nodeWasi } from '../host/node-wasi.mjs';
import * as wire from '../host/wire.mjs';

const wasmPath = new URL('../../build/plugins/hostcalls.wasm', import.meta.url);
let module; // compiled once, instantiated by every host below
const scratch = mkdtempSync(join(tmpdir(), 'bardo-host-')); // guests' stderr files
after(() => rmSync(scratch, { recursive: true, force: true }));
let hosts = 0;

before(async () => {
  let bytes;
  try { bytes = readFileSync(wasmPath); } catch {
    throw new Error('build/plugins/hostcalls.wasm is missing: build it first (see wasm/README.md)');
  }
  module = await WebAssembly.compile(bytes);
});

const T0 = BigInt(Date.UTC(2025, 0, 1)) * 1_000_000n; // a plausible host clock, in ns
const MINUTE = 60n * 1_000_000_000n;

/** A host with an injected clock and captured logs, metrics and guest stderr. */
async function makeHost(options = {}) {
  const t = { now: T0, logs: [], metrics: [] };
  t.stderr = join(scratch, `stderr-${++hosts}`);
  const fd = openSync(t.stderr, 'w+');
  t.host = await PluginHost.load(module, {
    wasi: nodeWasi({ stderr: fd }),
    config: { suffix: ' [edge]' },
    clock: () => t.now,
    logger: (e) => t.logs.push(e),
    metrics: (m) => t.metrics.push(m),
    ...options,
  });
  return t;
}

const say = (tenant, text, extra = {}) => ({
  meta: { tenant, requestID: `req-${tenant}`, dialect: wire.Dialect.OpenAI },
  request: { model: 'gpt-x', messages: [
    { role: 'user', content: [{ type: wire.BlockType.Text, text: 'earlier' }] },
    { role: 'assistant', content: [{ type: wire.BlockType.Text, text: 'ok' }] },
    { role: 'user', content: [{ type: wire.BlockType.Text, text }] },
  ], ...extra },
});
const lastText = (res) => res.request.messages.at(-1).content.at(-1).text;
const header = (res, name) => res.headers.find((h) => h.key === name)?.value;

test('describe: hostcalls is a request-phase layer that reads and writes messages', async () => {
  const { host } = await makeHost();
  assert.deepEqual(await host.describe(), {
    abi: 1, name: 'hostcalls', version: '1.0.0', kind: 'layer',
    phases: wire.Phase.Request, reads: wire.Part.Messages, writes: wire.Part.Messages, flags: 0,
  });
});

test('onRequest: config, per-tenant KV counting, header, metric, logs', async () => {
  const { host, metrics, logs } = await makeHost();
  const r1 = await host.onRequest(say('t1', 'hello'));
  assert.equal(r1.action, wire.Action.Continue);
  assert.equal(r1.patched, wire.Part.Messages);
  assert.equal(lastText(r1), 'hello [edge] #1');
  assert.equal(header(r1, 'X-Bardo-Hostcalls'), '1');
  assert.equal(r1.request.messages[0].content[0].text, 'earlier', 'other messages come back untouched');

  assert.equal(lastText(await host.onRequest(say('t1', 'hello'))), 'hello [edge] #2');
  const other = await host.onRequest(say('t2', 'hello'));
  assert.equal(lastText(other), 'hello [edge] #1', 'tenant t2 has its own namespace');
  assert.equal(header(other, 'X-Bardo-Hostcalls'), '1');
  assert.equal(lastText(await host.onRequest(say('t1', 'hello'))), 'hello [edge] #3');
  assert.equal(lastText(await host.onRequest(say('t1', 'please reset'))), 'please reset [edge] #1', 'reset deletes the key');
  assert.equal(lastText(await host.onRequest(say('t1', 'hello'))), 'hello [edge] #2');

  assert.equal(metrics.length, 6);
  for (const m of metrics) {
    assert.deepEqual({ ...m, tenant: undefined }, { plugin: 'hostcalls', tenant: undefined, kind: 'counter', name: 'hostcalls_requests_total', value: 1 });
  }
  assert.deepEqual(logs.slice(0, 3), [
    { plugin: 'hostcalls', tenant: 't1', requestID: 'req-t1', level: 'debug', message: 'tenant "t1" request 1' },
    { plugin: 'hostcalls', tenant: 't1', requestID: 'req-t1', level: 'debug', message: 'tenant "t1" request 2' },
    { plugin: 'hostcalls', tenant: 't2', requestID: 'req-t2', level: 'debug', message: 'tenant "t2" request 1' },
  ]);
  assert.equal(host.instances, 1);
});

test('keys are namespaced by plugin and tenant in the store', async () => {
  const kv = new MemoryKV();
  const { host } = await makeHost({ kv });
  await host.onRequest(say('t1', 'hello'));
  await host.onRequest(say('t2', 'hello'));
  await host.onRequest(say('t2', 'hello'));
  // The shared space ("*") is the plugin's, across tenants.
  assert.deepEqual([...kv.map.keys()].sort(), ['hostcalls\0*\0count', 'hostcalls\0t1\0count', 'hostcalls\0t2\0count']);
  assert.equal(new TextDecoder().decode(kv.get('hostcalls\0*\0count')), '3');
  assert.equal(new TextDecoder().decode(kv.get('hostcalls\0t2\0count')), '2');
});

test('only the parts the layer reads cross the boundary; applyPatch applies the parts it writes', async () => {
  const inputs = [];
  class Spy extends PluginHost {
    async call(name, input, ...rest) { inputs.push(input); return super.call(name, input, ...rest); }
  }
  const host = await Spy.load(module, { wasi: nodeWasi(), config: { suffix: '!' }, logger: () => {} });
  const req = say('t1', 'hi', { system: [{ type: wire.BlockType.Text, text: 'secret system prompt' }], params: { maxTokens: 9 } });
  const res = await host.onRequest(req);
  const sent = wire.LayerRequest.decode(inputs[0]).request;
  assert.equal(sent.model, '');
  assert.deepEqual(sent.system, []);
  assert.equal(sent.params.maxTokens, 0);
  assert.equal(sent.messages.length, 3);

  const patched = applyPatch(req.request, res, (await host.describe()).writes);
  assert.equal(patched.model, 'gpt-x');
  assert.equal(patched.system, req.request.system);
  assert.equal(patched.messages.at(-1).content.at(-1).text, 'hi! #1');
  assert.equal(req.request.messages.at(-1).content.at(-1).text, 'hi', 'the input request is not modified');
});

test('TTL: the count expires after the hour the plugin asks for (injected clock)', async () => {
  const t = await makeHost();
  assert.equal(lastText(await t.host.onRequest(say('t1', 'a'))), 'a [edge] #1');
  t.now += 59n * MINUTE;
  assert.equal(lastText(await t.host.onRequest(say('t1', 'a'))), 'a [edge] #2', 'not yet expired; the put renews the TTL');
  t.now += 59n * MINUTE;
  assert.equal(lastText(await t.host.onRequest(say('t1', 'a'))), 'a [edge] #3');
  t.now += 60n * MINUTE; // exactly one hour after the last put
  assert.equal(lastText(await t.host.onRequest(say('t1', 'a'))), 'a [edge] #1', 'expired');
});

test('MemoryKV: ttl 0 never expires, expiry is at now >= put + ttl', () => {
  let now = 1000;
  const kv = new MemoryKV({ now: () => now });
  kv.put('a', new Uint8Array([1]), 0);
  kv.put('b', new Uint8Array([2]), 10);
  now = 1009;
  assert.deepEqual(kv.get('b'), new Uint8Array([2]));
  now = 1010;
  assert.equal(kv.get('b'), undefined);
  assert.equal(kv.map.has('b'), false, 'an expired key is removed when read');
  now = 1e15;
  assert.deepEqual(kv.get('a'), new Uint8Array([1]));
});

test('clock_now reaches the guest (a pre-2020 clock makes hostcalls warn)', async () => {
  const t = await makeHost();
  t.now = 0n;
  await t.host.onRequest(say('t1', 'x'));
  assert.deepEqual(t.logs[0], { plugin: 'hostcalls', tenant: 't1', requestID: 'req-t1', level: 'warn', message: 'host clock looks wrong' });
});

test('no config: the plugin keeps its default suffix (config() reports length 0)', async () => {
  const { host } = await makeHost({ config: undefined });
  assert.equal(lastText(await host.onRequest(say('t1', 'x'))), 'x [hostcalls] #1');
});

test('kv_get returns the full length so the guest retries with a bigger buffer', async () => {
  const kv = new MemoryKV();
  kv.put('hostcalls\0t9\0count', new TextEncoder().encode('0'.repeat(1000) + '41'), 0); // > the guest's 256-byte first try
  const { host } = await makeHost({ kv });
  assert.equal(lastText(await host.onRequest(say('t9', 'x'))), 'x [edge] #42');
});

test('memory growth during a call: a 4 MiB message round-trips', async () => {
  const { host } = await makeHost();
  const big = 'ü'.repeat(2 << 20);
  const res = await host.onRequest(say('t1', big));
  assert.equal(lastText(res), `${big} [edge] #1`);
  assert.equal(lastText(await host.onRequest(say('t1', 'small'))), 'small [edge] #2');
});

test('concurrent calls are serialized on the one instance', async () => {
  const { host } = await makeHost();
  const results = await Promise.all(Array.from({ length: 20 }, () => host.onRequest(say('t1', 'c'))));
  assert.deepEqual(results.map((r) => header(r, 'X-Bardo-Hostcalls')).sort((a, b) => a - b),
    Array.from({ length: 20 }, (_, i) => String(i + 1)));
  assert.equal(host.instances, 1);
});

test('a guest error (status byte 0) is a PluginError and keeps the instance', async () => {
  const { host } = await makeHost();
  await host.onRequest(say('t1', 'x'));
  await assert.rejects(host.onResponse({ meta: { tenant: 't1' }, response: { id: 'r' } }),
    (err) => err instanceof PluginError && err.message === 'layer hostcalls has no OnResponse');
  assert.equal(lastText(await host.onRequest(say('t1', 'x'))), 'x [edge] #2');
  assert.equal(host.instances, 1);
});

test('refused KV operations surface as the guest\'s error, not a trap', async () => {
  const { host, logs } = await makeHost();
  await assert.rejects(host.onRequest(say('evil\0tenant', 'x')), /host refused the key\/value operation/);
  assert.ok(logs.some((l) => l.level === 'warn' && /tenant containing NUL/.test(l.message)));
  const broken = await makeHost({ kv: { get() { throw new Error('store down'); }, put() { throw new Error('store down'); }, delete() {} } });
  await assert.rejects(broken.host.onRequest(say('t1', 'x')), PluginError);
  assert.ok(broken.logs.some((l) => l.level === 'error' && l.message === 'kv_put: store down'));
  assert.equal(broken.host.instances, 1);
});

test('a lying input length is refused by the guest SDK, not trapped on', async () => {
  const { host } = await makeHost();
  const input = wire.LayerRequest.encode(say('t1', 'x'), wire.Part.Messages);
  await assert.rejects(host.call('bardo_on_request', input, { tenant: 't1' }, { inputLen: 16 << 20 }),
    (err) => err instanceof PluginError && /exceeds the buffer/.test(err.message));
  assert.equal(host.instances, 1);
});

test('hash and regex sets run on the host; the shared kv spans tenants', async () => {
  const { host } = await makeHost();
  const text = 'call 555 0100 or mail ann@example.com, bob@test.org; ref 42 — ünï';
  const res = await host.onRequest(say('t1', text));
  const { createHash } = await import('node:crypto');
  assert.equal(header(res, 'X-Bardo-Hostcalls-Hash'), createHash('sha256').update(text).digest('hex').slice(0, 8));
  assert.equal(header(res, 'X-Bardo-Hostcalls-Matches'), '3,2');
  assert.equal(header(res, 'X-Bardo-Hostcalls-Shared'), '1');
  assert.equal(header(await host.onRequest(say('t2', 'x')), 'X-Bardo-Hostcalls-Shared'), '2');
});

test('trap: a guest panic drops the instance; the next call gets a fresh, initialized one', async () => {
  const t = await makeHost();
  const { host } = t;
  assert.equal(lastText(await host.onRequest(say('t1', 'x'))), 'x [edge] #1');
  assert.equal(host.instances, 1);

  // The plugin panics on "trap!", which Go turns into a wasm `unreachable`
  // trap. (A lying input length no longer traps: the SDK refuses it.)
  const input = wire.LayerRequest.encode(say('t1', 'x'), wire.Part.Messages);
  const trapInput = wire.LayerRequest.encode(say('t1', 'trap!'), wire.Part.Messages);
  await assert.rejects(host.call('bardo_on_request', trapInput, { tenant: 't1' }), (err) => {
    assert.ok(err instanceof PluginTrap, err);
    assert.ok(err.cause instanceof WebAssembly.RuntimeError, `cause: ${err.cause}`);
    return true;
  });
  assert.match(readFileSync(t.stderr, 'utf8'), /panic: hostcalls: trap requested/);

  // The next call runs on a new instance, initialized again (the suffix comes
  // from config read in Init), with the host-side KV intact.
  assert.equal(lastText(await host.onRequest(say('t1', 'x'))), 'x [edge] #2');
  assert.equal(host.instances, 2);
  assert.equal(lastText(await host.onRequest(say('t1', 'x'))), 'x [edge] #3');
  assert.equal(host.instances, 2);

  // Two calls wait for the next instance; the first traps on it, the second
  // must notice and wait for yet another instance.
  const trap = () => host.call('bardo_on_request', trapInput, { tenant: 't1' });
  await assert.rejects(trap(), PluginTrap); // no live instance now
  const [trapped, waiting] = await Promise.allSettled([trap(), host.call('bardo_on_request', input, { tenant: 't1' })]);
  assert.ok(trapped.reason instanceof PluginTrap);
  assert.equal(waiting.status, 'fulfilled', waiting.reason);
  assert.equal(lastText(wire.LayerResult.decode(waiting.value)), 'x [edge] #4');
  assert.equal(host.instances, 4);
});

test('trap: a host function that throws unwinds the guest, which is then dropped too', async () => {
  let fail = true;
  const t = await makeHost({ metrics: () => { if (fail) throw new Error('sink exploded'); } });
  await assert.rejects(t.host.onRequest(say('t1', 'x')), (err) => err instanceof PluginTrap && err.cause.message === 'sink exploded');
  fail = false;
  // The KV put happened before the metric call, so the count moved on to 2.
  assert.equal(lastText(await t.host.onRequest(say('t1', 'x'))), 'x [edge] #2');
  assert.equal(t.host.instances, 2);
});

test('applyPatch keeps the caller\'s unknown members a patch lacks (ABI v1.4, as host/pipeline/patch.go)', () => {
  const request = {
    system: [{ type: 1, text: 's', extra: '{"a":1}' }],
    messages: [{ role: 'user', content: [{ type: 1, text: 'jane@x.io', extra: '{"b":2}' }] },
      { role: 'system', extra: '{"cache_control":{"type":"ephemeral"}}', content: [{ type: 1, text: 'be brief' }] }],
    tools: [{ name: 'Read', extra: '{"defer_loading":true}' }, { name: 'Edit', extra: '{"e":1}' }],
  };
  const result = {
    patched: 2 | 4 | 8,
    request: {
      system: [{ type: 1, text: 's' }],
      messages: [{ role: 'user', content: [{ type: 1, text: '[EMAIL_1]' }] }, { role: 'system', content: [{ type: 1, text: 'be brief' }] }],
      tools: [{ name: 'Edit' }],
    },
  };
  const out = applyPatch(request, result);
  assert.equal(out.system[0].extra, '{"a":1}');
  assert.equal(out.messages[0].content[0].text, '[EMAIL_1]');
  assert.equal(out.messages[0].content[0].extra, '{"b":2}');
  assert.equal(out.messages[1].extra, '{"cache_control":{"type":"ephemeral"}}');
  assert.deepEqual(out.tools, [{ name: 'Edit', extra: '{"e":1}' }]);
  // fewer messages: nothing is guessed
  const folded = applyPatch(request, { patched: 4, request: { messages: [{ role: 'user', content: [{ type: 1, text: 'summary' }] }] } });
  assert.equal(folded.messages[0].content[0].extra, undefined);
});
