// The edge host offers none of the ABI v1.2 services (local models, vector
// index, internal completions): a plugin that calls them gets an error reply
// it can handle, never a trap. The services test plugin (testplugins/services,
// built by `make plugins`) reports each error in a header.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { PluginHost } from '../host/bardo-host.mjs';
import { nodeWasi } from '../host/node-wasi.mjs';
import * as wire from '../host/wire.mjs';

const wasmPath = new URL('../../build/plugins/services.wasm', import.meta.url);
let module;

before(async () => {
  let bytes;
  try { bytes = readFileSync(wasmPath); } catch {
    throw new Error('build/plugins/services.wasm is missing: run `make plugins`');
  }
  module = await WebAssembly.compile(bytes);
});

const command = (text) => ({
  meta: { tenant: 't', requestID: 'r', dialect: wire.Dialect.OpenAI },
  request: { model: 'm', messages: [{ role: 'user', content: [{ type: wire.BlockType.Text, text }] }] },
});

test('services answer with an error the plugin handles, and the instance lives on', async () => {
  const host = await PluginHost.load(module, { wasi: nodeWasi({}), config: {} });
  for (const cmd of ['remember x', 'recall x', 'classify x', 'summarise x', 'forget x']) {
    const res = await host.onRequest(command(cmd));
    const err = res.headers.find((h) => h.key === 'X-Services-Error')?.value ?? '';
    assert.match(err, /not offered by this host/, `${cmd}: ${err}`);
  }
});
