// bardo-host.mjs — a small JavaScript host for Bardo ABI v1 plugins.
//
// It runs the same .wasm layers as the native (Go + wazero) host, for edge
// runtimes (workerd) and for node. It has no Node dependency: WASI comes from an
// injected factory (node: ./node-wasi.mjs; workerd: a shim), and KV, config,
// metrics, logging and the clock are plain options.
//
//   const host = await PluginHost.load(wasmBytes, { wasi: nodeWasi(), config: { suffix: '!' } });
//   const result = await host.onRequest({ meta: { tenant: 't1' }, request: { messages: [...] } });
//
// Call protocol (one op): bardo_buffer(len) → ptr; write the encoded input at ptr;
// bardo_<op>(len) → BigInt ptr<<32|len of the output; output[0] === 0 is an
// error message, else a wire message. Memory may grow during any guest call, so
// every access takes a fresh view of memory.buffer. A guest that traps (throws
// out of an export) is dropped; the next call gets a fresh, initialized instance.

import * as wire from './wire.mjs';
import { sha256 } from './sha256.mjs';

/** The guest returned an error (status byte 0); the instance stays usable. */
export class PluginError extends Error {
  constructor(message, options) { super(message, options); this.name = 'PluginError'; }
}
/** The guest trapped; the instance was dropped. `cause` holds the original exception. */
export class PluginTrap extends Error {
  constructor(message, options) { super(message, options); this.name = 'PluginTrap'; }
}

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'];
export const METRIC_KINDS = ['counter', 'gauge', 'histogram'];

/**
 * In-memory KV store with TTL expiry. A KV store is any object with synchronous
 * get(key) → Uint8Array|undefined, put(key, value, ttlMs) (ttlMs 0 = no expiry)
 * and delete(key): host functions cannot await.
 */
export class MemoryKV {
  constructor({ now = Date.now } = {}) { this.now = now; this.map = new Map(); }
  get(key) {
    const e = this.map.get(key);
    if (e && e.expires && this.now() >= e.expires) { this.map.delete(key); return undefined; }
    return e?.value;
  }
  put(key, value, ttlMs) { this.map.set(key, { value: value.slice(), expires: ttlMs > 0 ? this.now() + ttlMs : 0 }); }
  delete(key) { this.map.delete(key); }
}

const utf8 = new TextDecoder();
const utf8Strict = new TextDecoder('utf-8', { fatal: true });
const utf8enc = new TextEncoder();

function configBytes(c) {
  if (c == null) return new Uint8Array(0);
  if (typeof c === 'string') return utf8enc.encode(c); // already JSON
  if (c instanceof Uint8Array) return c;
  return utf8enc.encode(JSON.stringify(c));
}

export class PluginHost {
  /**
   * Compiles `wasm` (bytes or a WebAssembly.Module) once and starts an instance.
   * @param {object} options
   * @param {() => {getImportObject(): object, initialize(instance): void}} options.wasi
   *   factory of a fresh WASI preview1 provider per instance (node's WASI fits).
   * @param {object|string} [options.config] plugin config (object → JSON, string = JSON).
   * @param {object} [options.kv] KV store (default: MemoryKV on the host clock).
   * @param {() => bigint} [options.clock] unix nanoseconds (default: Date.now()).
   * @param {(m: {plugin, tenant, kind, name, value}) => void} [options.metrics] metrics sink.
   * @param {(e: {plugin, tenant, requestID, level, message}) => void} [options.logger] (default: console).
   * @param {string} [options.name] KV namespace / log tag (default: the descriptor's name).
   * @param {string} [options.entry] the plugin to run in a module that bundles several
   *   (ABI v1.5, docs/abi.md "Bundles"; default: the only one, or else the one called `name`).
   *   Hosts of several entries of one bundle pass it the same compiled WebAssembly.Module.
   */
  static async load(wasm, options) {
    const module = wasm instanceof WebAssembly.Module ? wasm : await WebAssembly.compile(wasm);
    const host = new this(module, options); // `this`: subclasses load as themselves
    await host.init();
    return host;
  }

  constructor(module, { wasi, config, kv, clock, metrics, logger, name, entry } = {}) {
    if (typeof wasi !== 'function') throw new TypeError('PluginHost: options.wasi must be a WASI provider factory');
    this.module = module;
    this.wasi = wasi;
    this.clock = clock ?? (() => BigInt(Date.now()) * 1_000_000n);
    this.kv = kv ?? new MemoryKV({ now: () => Number(this.clock() / 1_000_000n) });
    this.metrics = metrics ?? (() => {});
    this.logger = logger ?? ((e) => (console[e.level] ?? console.log)(`[${e.plugin}] ${e.message}`));
    this.name = name;
    this.entry = entry;
    this.index = null; // the entry's index in a bundle (bardo_select), found on the first instance
    this.descriptor = null;
    this.instances = 0; // instances created so far (a trap makes the next call create one)
    this.#config = configBytes(config);
  }

  #config;
  #exports = null; // exports of the live instance
  #starting = null; // promise of the instance being created
  #ctx = { tenant: '', requestID: '' }; // the call in progress (tenant namespaces KV)

  /** The plugin's descriptor (cached: it cannot change between instances). */
  async describe() { await this.init(); return this.descriptor; }

  /** Ensures a live, initialized instance (bardo_init runs once per instance). */
  init() {
    if (this.#exports) return Promise.resolve();
    return (this.#starting ??= this.#start().finally(() => { this.#starting = null; }));
  }

  async #start() {
    const wasi = this.wasi();
    const live = { ex: null }; // what this instance's host functions read and write
    const instance = await WebAssembly.instantiate(this.module, {
      ...wasi.getImportObject(), bardo_v1: this.#imports(live),
    });
    this.instances++;
    const ex = (live.ex = instance.exports);
    wasi.initialize(instance); // runs _initialize: the Go runtime and the plugin's init()
    const abi = ex.bardo_abi_version();
    if (abi !== 1) throw new PluginError(`plugin speaks ABI ${abi}, this host speaks 1`);
    this.#selectEntry(ex);
    this.descriptor ??= wire.Descriptor.decode(this.#invoke(ex, 'bardo_describe', new Uint8Array(0)));
    this.name ??= this.descriptor.name;
    this.#invoke(ex, 'bardo_init', new Uint8Array(0));
    this.#exports = ex;
  }

  // A bundle (ABI v1.5: bardo_entries, bardo_select) serves the entry this
  // host runs: found by name on the first instance, selected on every
  // instance before anything else. Each PluginHost keeps its own instance,
  // so the selection holds for every later call. A module without the
  // exports has one plugin.
  #selectEntry(ex) {
    if (typeof ex.bardo_entries !== 'function' || typeof ex.bardo_select !== 'function') {
      if (this.entry != null && this.index === null) {
        const d = wire.Descriptor.decode(this.#invoke(ex, 'bardo_describe', new Uint8Array(0)));
        if (d.name !== this.entry) throw new PluginError(`the module is plugin ${d.name}, not ${this.entry}`);
      }
      this.index = 0;
      return;
    }
    if (this.index === null) {
      const n = ex.bardo_entries() >>> 0;
      const names = [];
      for (let i = 0; i < n; i++) {
        if (ex.bardo_select(i) !== 0) throw new PluginError(`bardo_select(${i}) refused an entry bardo_entries counts`);
        names.push(wire.Descriptor.decode(this.#invoke(ex, 'bardo_describe', new Uint8Array(0))).name);
      }
      const want = this.entry ?? this.name;
      const i = n === 1 && this.entry == null ? 0 : names.indexOf(want);
      if (i < 0) throw new PluginError(`the module has no plugin "${want}" (it has ${names.join(', ')})`);
      this.index = i;
    }
    if (ex.bardo_select(this.index) !== 0) throw new PluginError(`bardo_select(${this.index}) refused`);
  }

  /** Runs a layer's request phase; only the parts the layer reads are sent. */
  async onRequest(layerRequest) {
    const { reads, writes } = await this.describe();
    const res = wire.LayerResult.decode(await this.call('bardo_on_request', wire.LayerRequest.encode(layerRequest, reads), layerRequest.meta));
    if (res.patched & ~writes) throw new PluginError(`${this.name} patched parts ${res.patched} outside its writes ${writes}`);
    return res;
  }
  /** Runs a layer's response phase. */
  async onResponse(layerResponse) {
    return wire.LayerResponseResult.decode(await this.call('bardo_on_response', wire.LayerResponse.encode(layerResponse), layerResponse.meta));
  }
  /**
   * Runs a layer's stream phase on one batch of events. The host reads a
   * result that says the batch is unchanged (ABI v1.6): its events are then
   * the very array passed in, not decoded again.
   */
  async onStream(layerStream) {
    const res = wire.LayerStreamResult.decode(await this.call('bardo_on_stream',
      wire.LayerStream.encode({ ...layerStream, unchangedOK: true }), layerStream.meta));
    if (res.unchanged) res.events = layerStream.events ?? [];
    return res;
  }

  /**
   * Low level: calls an op export with encoded input and returns the encoded
   * output. `inputLen` (default input.length) is what the export is told; only
   * fault-injection tests pass anything else.
   */
  async call(exportName, input, meta = {}, { inputLen } = {}) {
    // Loop: a concurrent call may have trapped (and dropped the instance) while we waited.
    while (!this.#exports) await this.init();
    return this.#invoke(this.#exports, exportName, input, meta, inputLen);
  }

  #invoke(ex, exportName, input, meta = {}, inputLen = input.length) {
    if (typeof ex[exportName] !== 'function') throw new PluginError(`plugin has no export ${exportName}`);
    let out;
    this.#ctx = { tenant: meta.tenant ?? '', requestID: meta.requestID ?? '' };
    try {
      const ptr = ex.bardo_buffer(input.length) >>> 0; // i32 results arrive signed
      new Uint8Array(ex.memory.buffer, ptr, input.length).set(input);
      const r = BigInt.asUintN(64, ex[exportName](inputLen)); // i64 too
      out = new Uint8Array(ex.memory.buffer, Number(r >> 32n), Number(r & 0xffffffffn)).slice();
    } catch (err) {
      if (this.#exports === ex) this.#exports = null; // drop it: its state is unknown
      throw new PluginTrap(`${this.name ?? 'plugin'}: ${exportName} trapped: ${err?.message ?? err}`, { cause: err });
    } finally {
      this.#ctx = { tenant: '', requestID: '' };
    }
    if (out.length === 0) throw new PluginError(`${exportName} returned no output (ABI violation)`);
    if (out[0] === 0) throw new PluginError(utf8.decode(out.subarray(1)));
    return out;
  }

  // ---- host functions, module "bardo_v1" ----

  #log(level, message) {
    this.logger({ plugin: this.name, tenant: this.#ctx.tenant, requestID: this.#ctx.requestID, level, message });
  }

  // The namespaced key, or null (refused) when the key is not UTF-8 or the
  // tenant holds the separator. shared: the plugin's space every tenant sees.
  #key(bytes, shared = false) {
    const { tenant } = this.#ctx;
    let key;
    try { key = utf8Strict.decode(bytes); } catch { key = null; }
    if (key === null || tenant.includes('\0')) { this.#log('warn', 'kv: refused a key that is not UTF-8 or a tenant containing NUL'); return null; }
    return shared ? `${this.name}\0*\0${key}` : `${this.name}\0${tenant}\0${key}`;
  }

  // Compiled regex sets (regex_compile); ids are indexes.
  #regexSets = [];

  #imports(live) {
    // A fresh view per access: memory.buffer changes when the guest grows memory.
    const mem = (ptr, len) => new Uint8Array(live.ex.memory.buffer, ptr >>> 0, len >>> 0);
    const copyOut = (bytes, ptr, cap) => {
      mem(ptr, Math.min(bytes.length, cap >>> 0)).set(bytes.subarray(0, cap >>> 0));
      return BigInt(bytes.length);
    };
    const guarded = (what, fail, f) => { // a failing store is the store's problem, not a guest trap
      try { return f(); } catch (err) { this.#log('error', `${what}: ${err?.message ?? err}`); return fail; }
    };
    const kvGet = (shared) => (kp, kl, bp, cap) => {
      const key = this.#key(mem(kp, kl), shared);
      if (key === null) return -1n;
      const v = guarded('kv_get', undefined, () => this.kv.get(key));
      return v == null ? -1n : copyOut(v, bp, cap);
    };
    const kvPut = (shared) => (kp, kl, vp, vl, ttlMs) => {
      const key = this.#key(mem(kp, kl), shared);
      if (key === null) return 1;
      if (ttlMs < 0n) { this.#log('warn', `kv_put: negative ttl ${ttlMs}ms refused`); return 1; }
      return guarded('kv_put', 1, () => { this.kv.put(key, mem(vp, vl).slice(), Number(ttlMs)); return 0; });
    };
    const kvDelete = (shared) => (kp, kl) => {
      const key = this.#key(mem(kp, kl), shared);
      if (key === null) return 1;
      return guarded('kv_delete', 1, () => { this.kv.delete(key); return 0; });
    };
    // ABI v1.2 services (docs/abi.md "Services"): the edge host runs no
    // local models, vector index or internal completions, so each answers
    // with an error reply (status byte 0 + message) the plugin can handle —
    // never a trap. A layer that needs them (L2, L8) then applies its own
    // failure policy.
    const unavailable = (name) => (ip, il, op, cap) =>
      copyOut(new Uint8Array([0, ...utf8enc.encode(`${name}: not offered by this host (the edge runs no local models)`)]), op, cap);
    return {
      embed: unavailable('embed'),
      classify: unavailable('classify'),
      vector_insert: unavailable('vector_insert'),
      vector_search: unavailable('vector_search'),
      vector_delete: unavailable('vector_delete'),
      complete: unavailable('complete'),
      kv_get_shared: kvGet(true),
      kv_put_shared: kvPut(true),
      kv_delete_shared: kvDelete(true),
      hash: (algo, dp, dl, op) => {
        if (algo !== 0) return 1;
        mem(op, 32).set(sha256(mem(dp, dl)));
        return 0;
      },
      regex_compile: (pp, pl) => {
        try {
          const res = utf8.decode(mem(pp, pl)).split('\n').map((p) => new RegExp(p, 'gu'));
          this.#regexSets.push(res);
          return this.#regexSets.length - 1;
        } catch (err) {
          this.#log('warn', `regex_compile refused: ${err?.message ?? err}`);
          return -1;
        }
      },
      regex_find: (id, tp, tl, bp, cap) => {
        const set = this.#regexSets[id];
        if (!set) return -1n;
        const bytes = mem(tp, tl).slice();
        const text = utf8.decode(bytes);
        // JS indexes UTF-16 code units; the ABI speaks UTF-8 byte offsets.
        const byteOffset = utf16ToUtf8Offsets(text);
        const out = [];
        set.forEach((re, i) => {
          re.lastIndex = 0;
          for (const m of text.matchAll(re)) {
            out.push(i, byteOffset(m.index), byteOffset(m.index + m[0].length));
          }
        });
        const buf = new Uint8Array(out.length * 4);
        const dv = new DataView(buf.buffer);
        out.forEach((v, j) => dv.setUint32(j * 4, v, true));
        return copyOut(buf, bp, cap);
      },
      log: (level, ptr, len) => this.#log(LOG_LEVELS[level >>> 0] ?? `level${level >>> 0}`, utf8.decode(mem(ptr, len))),
      clock_now: () => BigInt(this.clock()),
      kv_get: kvGet(false),
      kv_put: kvPut(false),
      kv_delete: kvDelete(false),
      config: (bp, cap) => copyOut(this.#config, bp, cap),
      metric: (kind, ptr, len, value) => this.metrics({
        plugin: this.name, tenant: this.#ctx.tenant,
        kind: METRIC_KINDS[kind >>> 0] ?? `kind${kind >>> 0}`, name: utf8.decode(mem(ptr, len)), value,
      }),
    };
  }
}

// utf16ToUtf8Offsets returns a function mapping a UTF-16 index of text to the
// UTF-8 byte offset of the same position.
function utf16ToUtf8Offsets(text) {
  const map = new Uint32Array(text.length + 1);
  let b = 0;
  for (let i = 0; i < text.length; i++) {
    map[i] = b;
    const c = text.charCodeAt(i);
    if (c < 0x80) b += 1;
    else if (c < 0x800) b += 2;
    else if (c >= 0xd800 && c <= 0xdbff) { b += 4; map[++i] = b; } // surrogate pair: 4 bytes
    else b += 3;
  }
  map[text.length] = b;
  return (i) => map[i];
}

/**
 * Returns request with the parts the layer patched (within `writes`) replaced by result's.
 * The caller's unknown members (`extra` of system blocks, messages, their blocks and tools,
 * ABI v1.4) are carried over where the patch lacks them, as host/pipeline/patch.go does:
 * tools by name, system blocks and messages in place when count, role and type are unchanged.
 */
export function applyPatch(request, result, writes = wire.Part.All) {
  const p = result.patched & writes;
  const r = keepExtras(request, result.request, p);
  const out = { ...request };
  if (p & wire.Part.Model) out.model = r.model;
  if (p & wire.Part.System) out.system = r.system;
  if (p & wire.Part.Messages) out.messages = r.messages;
  if (p & wire.Part.Tools) { out.tools = r.tools; out.toolChoice = r.toolChoice; }
  if (p & wire.Part.Params) out.params = r.params;
  if (p & wire.Part.Extra) out.extra = r.extra;
  return out;
}

const hasRaw = (x) => x != null && x.length > 0;

// keepExtras returns patch with the extras of request copied onto the
// elements that lack them (a copy where it changes anything).
function keepExtras(request, patch, parts) {
  const blocks = (from = [], to = []) => (to.length !== from.length ? to : to.map((b, i) =>
    (!hasRaw(b.extra) && hasRaw(from[i].extra) && b.type === from[i].type ? { ...b, extra: from[i].extra } : b)));
  const out = { ...patch };
  if (parts & wire.Part.Tools) {
    out.tools = (patch.tools ?? []).map((t) => {
      if (hasRaw(t.extra)) return t;
      const old = (request.tools ?? []).find((o) => o.name === t.name);
      return old && hasRaw(old.extra) ? { ...t, extra: old.extra } : t;
    });
  }
  if (parts & wire.Part.System) out.system = blocks(request.system, patch.system);
  const msgs = request.messages ?? [];
  if (parts & wire.Part.Messages && (patch.messages ?? []).length === msgs.length) {
    out.messages = patch.messages.map((m, i) => {
      const o = msgs[i];
      if (m.role !== o.role) return m;
      return { ...m, extra: hasRaw(m.extra) ? m.extra : o.extra, content: blocks(o.content, m.content) };
    });
  }
  return out;
}
