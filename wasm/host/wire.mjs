// wire.mjs — the Bardo ABI v1 wire format in JavaScript.
//
// A byte-for-byte port of sdk/wire (codec.go, messages.go): every message is a
// format-version byte (1) followed by fields in a fixed order, written as
// unsigned varints, zig-zag signed varints, one-byte bools, little-endian
// float64s, and length-prefixed UTF-8 strings / raw bytes. wasm/golden and
// wasm/test/golden.test.mjs fail when this file and the Go codec drift apart.
//
// Values are plain objects whose field names are the Go names with the leading
// capital (or leading all-caps initialism) lower-cased: RequestID → requestID,
// ID → id, CacheControl → cacheControl, BaseURL → baseURL, ABI → abi.
//
//   - Strings are JS strings (decoded as UTF-8; invalid bytes become U+FFFD).
//   - Raw bytes ([]byte, raw JSON) decode to a Uint8Array, or null when empty
//     (Go's nil); encoders also accept a string (written as UTF-8) or null.
//   - Integers decode to a Number, or to a BigInt when outside the safe range
//     (int64 seeds, huge token counts); encoders accept either.
//   - Lists decode to arrays ([] when empty); optional structs (*Error,
//     *Response, *UpstreamCall) decode to null when absent.
//   - Encoders treat a missing field as its zero value, so partial objects work.
//
// This module has no Node dependency: it runs unchanged in workerd.

export const FORMAT_VERSION = 1;

// Part: sections of a Request a layer reads or writes.
export const Part = Object.freeze({ Model: 1, System: 2, Messages: 4, Tools: 8, Params: 16, Extra: 32, All: 63 });
// Phase: pipeline phases a layer takes part in.
export const Phase = Object.freeze({ Request: 1, Response: 2, Stream: 4, Fallback: 8 });
// Flag: Descriptor.flags (ABI v1.6). WatchStream: the layer only watches
// answers; a host may hand it a streamed answer whole, through on_response.
export const Flag = Object.freeze({ WatchStream: 1 });
export const Dialect = Object.freeze({ None: 0, OpenAI: 1, Anthropic: 2 });
export const BlockType = Object.freeze({
  Text: 1, Image: 2, ToolUse: 3, ToolResult: 4, Thinking: 5, RedactedThinking: 6, Document: 7, Other: 8,
});
export const Action = Object.freeze({ Continue: 0, Answer: 1, Reject: 2 });
export const EventType = Object.freeze({
  MessageStart: 1, BlockStart: 2, Delta: 3, BlockStop: 4, MessageDelta: 5, MessageStop: 6, Error: 7, Ping: 8,
});
export const DeltaKind = Object.freeze({ Text: 1, InputJSON: 2, Thinking: 3, Signature: 4 });
// Params.set flags: which optional sampling parameters are set.
export const Has = Object.freeze({ Temperature: 1, TopP: 2, TopK: 4, MaxTokens: 8, Seed: 16 });

export class WireError extends Error {
  constructor(message) { super(message); this.name = 'WireError'; }
}
const truncated = () => new WireError('wire: message truncated');

const utf8enc = new TextEncoder();
const utf8dec = new TextDecoder(); // non-fatal, like Go's string(bytes) minus the invalid bytes
const TWO64 = 1n << 64n;

// Returns a Number when it holds v exactly, else the BigInt.
const narrow = (v) => (v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v);

function toBytes(b) {
  if (b == null) return new Uint8Array(0);
  if (typeof b === 'string') return utf8enc.encode(b);
  if (b instanceof Uint8Array) return b;
  if (ArrayBuffer.isView(b)) return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  if (b instanceof ArrayBuffer) return new Uint8Array(b);
  throw new TypeError(`wire: expected bytes, got ${typeof b}`);
}

/** Encoder appends values to a growing buffer that starts with the format version byte. */
export class Encoder {
  constructor() { this.buf = new Uint8Array(256); this.len = 0; this.reset(); }
  reset() { this.len = 0; this.byte(FORMAT_VERSION); }
  /** A copy of the encoded message. */
  bytes() { return this.buf.slice(0, this.len); }
  #room(n) {
    if (this.len + n <= this.buf.length) return;
    const b = new Uint8Array(Math.max(this.buf.length * 2, this.len + n));
    b.set(this.buf.subarray(0, this.len));
    this.buf = b;
  }
  byte(v) { this.#room(1); this.buf[this.len++] = v; }
  uint(v = 0) {
    if (typeof v === 'bigint') {
      if (v < 0n || v >= TWO64) throw new RangeError(`wire: uint out of range: ${v}`);
      for (; v >= 0x80n; v >>= 7n) this.byte(Number(v & 0x7fn) | 0x80);
      this.byte(Number(v));
      return;
    }
    if (!Number.isInteger(v) || v < 0 || v >= 2 ** 64) throw new RangeError(`wire: bad uint: ${v}`);
    // Exact for any integer-valued double: % 128 and / 128 never round.
    for (; v >= 0x80; v = Math.floor(v / 128)) this.byte((v % 128) | 0x80);
    this.byte(v);
  }
  int(v = 0) {
    if (typeof v === 'number' && Number.isInteger(v) && Math.abs(v) < 2 ** 52) {
      this.uint(v >= 0 ? v * 2 : -v * 2 - 1); // zig-zag, exact below 2^52
      return;
    }
    if (typeof v === 'number' && !Number.isInteger(v)) throw new RangeError(`wire: bad int: ${v}`);
    const b = BigInt(v);
    if (b < -(1n << 63n) || b >= 1n << 63n) throw new RangeError(`wire: int out of range: ${v}`);
    this.uint(b >= 0n ? b << 1n : ((-b) << 1n) - 1n);
  }
  bool(v) { this.byte(v ? 1 : 0); }
  float(v = 0) {
    this.#room(8);
    new DataView(this.buf.buffer).setFloat64(this.len, v, true);
    this.len += 8;
  }
  raw(b) {
    const bytes = toBytes(b);
    this.uint(bytes.length);
    this.#room(bytes.length);
    this.buf.set(bytes, this.len);
    this.len += bytes.length;
  }
  string(s = '') { this.raw(utf8enc.encode(s)); }
}

/** Decoder reads what an Encoder wrote; it throws WireError on the first malformed field. */
export class Decoder {
  constructor(bytes) {
    this.buf = toBytes(bytes);
    if (this.buf.length === 0) throw truncated();
    if (this.buf[0] !== FORMAT_VERSION) {
      throw new WireError(`wire: format version ${this.buf[0]}, this side understands ${FORMAT_VERSION}`);
    }
    this.pos = 1;
  }
  #next() {
    if (this.pos >= this.buf.length) throw truncated();
    return this.buf[this.pos++];
  }
  /** Unsigned varint, with Go's binary.Uvarint limits (10 bytes, no overflow). */
  uint() {
    const start = this.pos;
    let v = 0;
    for (let shift = 0; shift < 49; shift += 7) { // 7 bytes = 49 bits: exact as a Number
      const b = this.#next();
      v += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return v;
    }
    this.pos = start; // longer: redo it in BigInt
    let big = 0n;
    for (let i = 0; i < 10; i++) {
      const b = this.#next();
      if (b < 0x80) {
        if (i === 9 && b > 1) throw truncated(); // overflows 64 bits
        return narrow(big | (BigInt(b) << BigInt(7 * i)));
      }
      big |= BigInt(b & 0x7f) << BigInt(7 * i);
    }
    throw truncated();
  }
  /** Zig-zag signed varint. */
  int() {
    const u = this.uint();
    if (typeof u === 'number') return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
    return narrow(u & 1n ? -(u >> 1n) - 1n : u >> 1n);
  }
  bool() { return this.#next() !== 0; }
  float() {
    if (this.buf.length - this.pos < 8) throw truncated();
    const v = new DataView(this.buf.buffer, this.buf.byteOffset).getFloat64(this.pos, true);
    this.pos += 8;
    return v;
  }
  /** A length checked against the bytes left, like Go's Decoder.count. */
  count(minElem = 1) {
    const n = this.uint();
    if (typeof n !== 'number' || n > Math.floor((this.buf.length - this.pos) / Math.max(minElem, 1))) throw truncated();
    return n;
  }
  #view() {
    const n = this.uint();
    if (typeof n !== 'number' || n > this.buf.length - this.pos) throw truncated();
    this.pos += n;
    return this.buf.subarray(this.pos - n, this.pos);
  }
  raw() { const v = this.#view(); return v.length ? v.slice() : null; }
  /** Whether bytes are left: a field appended in a later ABI minor version is read only when present (Go: Decoder.More). */
  more() { return this.pos < this.buf.length; }
  string() { return utf8dec.decode(this.#view()); }
}

// ---- codecs: {enc(e, value), dec(d) → value, zero() → value} ----

const prim = (enc, dec, zero) => ({ enc, dec, zero: () => zero });
const uint = prim((e, v) => e.uint(v ?? 0), (d) => d.uint(), 0);
const uintN = (bits) => prim((e, v) => e.uint(v ?? 0), (d) => { const v = d.uint(); return Number(BigInt.asUintN(bits, BigInt(v))); }, 0);
const u8 = uintN(8); // Go: uint8(d.Uint()) and named uint8 types
const u32 = uintN(32); // Go: uint32(d.Uint()), Part, Phase
const int = prim((e, v) => e.int(v ?? 0), (d) => d.int(), 0);
const bool = prim((e, v) => e.bool(v), (d) => d.bool(), false);
const float = prim((e, v) => e.float(v ?? 0), (d) => d.float(), 0);
const string = prim((e, v) => e.string(v ?? ''), (d) => d.string(), '');
const raw = prim((e, v) => e.raw(v), (d) => d.raw(), null);

const list = (t, minElem) => ({
  enc(e, v = []) { v ??= []; e.uint(v.length); for (const x of v) t.enc(e, x); },
  dec(d) { const n = d.count(minElem); const a = new Array(n); for (let i = 0; i < n; i++) a[i] = t.dec(d); return a; },
  zero: () => [],
});
const struct = (fields) => ({
  enc(e, v) { v ??= {}; for (const [k, t] of fields) t.enc(e, v[k]); },
  dec(d) { const o = {}; for (const [k, t] of fields) o[k] = t.dec(d); return o; },
  zero() { const o = {}; for (const [k, t] of fields) o[k] = t.zero(); return o; },
});
const opt = (t) => ({
  enc(e, v) { e.bool(v != null); if (v != null) t.enc(e, v); },
  dec: (d) => (d.bool() ? t.dec(d) : null),
  zero: () => null,
});

const kv = struct([['key', string], ['value', string]]);
const kvs = list(kv, 2);
const block = struct([
  ['type', u8], ['text', string], ['id', string], ['name', string], ['data', raw],
  ['signature', string], ['isError', bool], ['cacheControl', raw],
]);
const blocks = list(block, 8);
const usage = struct([['inputTokens', int], ['outputTokens', int], ['cacheReadTokens', int], ['cacheWriteTokens', int]]);
const meta = struct([
  ['requestID', string], ['tenant', string], ['session', string], ['dialect', u8],
  ['model', string], ['stream', bool], ['annotations', kvs],
]);
const route = struct([['provider', string], ['model', string], ['baseURL', string]]);
const error = struct([['status', int], ['kind', string], ['message', string], ['retryable', bool], ['retryAfterMs', int]]);
const messages = list(struct([['role', string], ['name', string], ['content', blocks]]), 3); // wire order: role, name, content
const tools = list(struct([['name', string], ['description', string], ['schema', raw], ['cacheControl', raw]]), 4);
const params = struct([
  ['set', u32], ['maxTokens', int], ['temperature', float], ['topP', float],
  ['topK', int], ['seed', int], ['stop', list(string, 1)],
]);
const response = struct([
  ['id', string], ['model', string], ['content', blocks], ['stopReason', string], ['stopSeq', string], ['usage', usage],
]);
const event = struct([
  ['type', u8], ['index', int], ['id', string], ['model', string], ['block', block], ['delta', u8],
  ['text', string], ['stopReason', string], ['stopSeq', string], ['usage', usage], ['error', opt(error)],
]);
const events = list(event, 16);
const upstreamCall = struct([
  ['method', string], ['url', string], ['headers', kvs], ['bodyMode', u8], ['bodyDialect', u8],
  ['body', raw], ['stream', bool], ['responseDialect', u8],
]);
const sse = struct([['event', string], ['data', raw]]);

/** A zero-valued Request (every part empty). */
export function zeroRequest() {
  return {
    model: '', system: [], messages: [], tools: [], toolChoice: null,
    params: params.zero(), stream: false, extra: null,
  };
}
/** A zero-valued Response. */
export const zeroResponse = () => response.zero();

// requestParts: the parts mask, Stream, then only the parts named in the mask
// (sdk/wire/messages.go requestParts). Tools carries ToolChoice with it.
function encRequestParts(e, r, parts) {
  r ??= {};
  e.uint(parts);
  e.bool(r.stream);
  if (parts & Part.Model) string.enc(e, r.model);
  if (parts & Part.System) blocks.enc(e, r.system);
  if (parts & Part.Messages) messages.enc(e, r.messages);
  if (parts & Part.Tools) { tools.enc(e, r.tools); raw.enc(e, r.toolChoice); }
  if (parts & Part.Params) params.enc(e, r.params);
  if (parts & Part.Extra) raw.enc(e, r.extra);
}
function decRequestParts(d) {
  const parts = u32.dec(d);
  const r = zeroRequest();
  r.stream = d.bool();
  if (parts & Part.Model) r.model = d.string();
  if (parts & Part.System) r.system = blocks.dec(d);
  if (parts & Part.Messages) r.messages = messages.dec(d);
  if (parts & Part.Tools) { r.tools = tools.dec(d); r.toolChoice = d.raw(); }
  if (parts & Part.Params) r.params = params.dec(d);
  if (parts & Part.Extra) r.extra = d.raw();
  return { parts, request: r };
}

// requestExtras (ABI v1.4, sdk/wire/messages.go requestExtras): the `extra`
// raw JSON objects of system blocks, messages, their blocks and tools, in
// requestParts order, one per element, after a version varint (1). Appended
// after the last field of LayerRequest, LayerResult and EncodeInput, and
// written only when some element has one, so requests without any encode as
// before. Decoded elements get `extra` (null when absent).
const rawLen = (x) => (x == null ? 0 : x.length);
function hasNestedExtras(r, parts) {
  const any = (bs) => (bs ?? []).some((b) => rawLen(b?.extra) > 0);
  if (parts & Part.System && any(r.system)) return true;
  if (parts & Part.Messages && (r.messages ?? []).some((m) => rawLen(m?.extra) > 0 || any(m?.content))) return true;
  return Boolean(parts & Part.Tools && (r.tools ?? []).some((t) => rawLen(t?.extra) > 0));
}
function encRequestExtras(e, r, parts, always = false) {
  r ??= {};
  if (!always && !hasNestedExtras(r, parts)) return;
  e.uint(1);
  if (parts & Part.System) for (const b of r.system ?? []) e.raw(b?.extra);
  if (parts & Part.Messages) {
    for (const m of r.messages ?? []) { e.raw(m?.extra); for (const b of m?.content ?? []) e.raw(b?.extra); }
  }
  if (parts & Part.Tools) for (const t of r.tools ?? []) e.raw(t?.extra);
}
function decRequestExtras(d, r, parts) {
  const present = d.more();
  if (present) {
    const v = d.uint();
    if (v !== 1) throw new WireError(`wire: request extras section version ${v}, this side understands 1`);
  }
  const read = (o) => { o.extra = present ? d.raw() : null; };
  if (parts & Part.System) r.system.forEach(read);
  if (parts & Part.Messages) for (const m of r.messages) { read(m); m.content.forEach(read); }
  if (parts & Part.Tools) r.tools.forEach(read);
}

// A top-level message: {encode(value) → Uint8Array, decode(bytes) → value}.
function msg(enc, dec) {
  return {
    encode(x, ...args) { const e = new Encoder(); enc(e, x ?? {}, ...args); return e.bytes(); },
    decode(bytes) { return dec(new Decoder(bytes)); },
  };
}
const fromStruct = (t) => msg((e, x) => t.enc(e, x), (d) => t.dec(d));

const descriptorHead = struct([
  ['abi', u32], ['name', string], ['version', string], ['kind', string],
  ['phases', u32], ['reads', u32], ['writes', u32],
]);
/** Descriptor: v1.6 appended flags (Flag), written only when set. */
export const Descriptor = msg(
  (e, x) => { descriptorHead.enc(e, x); if (x.flags) e.uint(x.flags); },
  (d) => { const o = descriptorHead.dec(d); o.flags = d.more() ? u32.dec(d) : 0; return o; },
);

/** LayerRequest.encode(x, parts = Part.All) writes only the given parts of x.request. */
export const LayerRequest = msg(
  (e, x, parts = Part.All) => { meta.enc(e, x.meta); encRequestParts(e, x.request, parts); encRequestExtras(e, x.request, parts); },
  (d) => {
    const m = meta.dec(d);
    const { parts, request } = decRequestParts(d);
    decRequestExtras(d, request, parts);
    return { meta: m, request };
  },
);

/**
 * LayerResult: result.patched is the parts mask of result.request. v1.6
 * appended skipAnswer (a flags varint after the extras section, which is
 * then always written).
 */
export const LayerResult = msg(
  (e, x) => {
    u8.enc(e, x.action); encRequestParts(e, x.request, x.patched ?? 0);
    opt(response).enc(e, x.answer); opt(error).enc(e, x.error); kvs.enc(e, x.headers); kvs.enc(e, x.annotations);
    encRequestExtras(e, x.request, x.patched ?? 0, Boolean(x.skipAnswer));
    if (x.skipAnswer) e.uint(1);
  },
  (d) => {
    const action = u8.dec(d);
    const { parts: patched, request } = decRequestParts(d);
    const out = { action, patched, request, answer: opt(response).dec(d), error: opt(error).dec(d), headers: kvs.dec(d), annotations: kvs.dec(d) };
    decRequestExtras(d, request, patched);
    out.skipAnswer = d.more() ? (d.uint() & 1) !== 0 : false;
    return out;
  },
);

export const LayerResponse = fromStruct(struct([['meta', meta], ['response', response]]));

/** LayerResponseResult: response is written only when replaced is set. */
export const LayerResponseResult = msg(
  (e, x) => { e.bool(x.replaced); if (x.replaced) response.enc(e, x.response); kvs.enc(e, x.headers); },
  (d) => {
    const replaced = d.bool();
    return { replaced, response: replaced ? response.dec(d) : response.zero(), headers: kvs.dec(d) };
  },
);

/** LayerStream: v1.6 appended unchangedOK (written only when set): the host reads LayerStreamResult.unchanged. */
const layerStreamHead = struct([['meta', meta], ['events', events], ['state', raw], ['final', bool]]);
export const LayerStream = msg(
  (e, x) => { layerStreamHead.enc(e, x); if (x.unchangedOK) e.bool(true); },
  (d) => { const o = layerStreamHead.dec(d); o.unchangedOK = d.more() ? d.bool() : false; return o; },
);
/** LayerStreamResult: v1.6 appended unchanged — the batch goes on as it came, and events are not sent. */
export const LayerStreamResult = msg(
  (e, x) => {
    events.enc(e, x.unchanged ? [] : x.events); raw.enc(e, x.state);
    if (x.unchanged) e.bool(true);
  },
  (d) => { const o = { events: events.dec(d), state: raw.dec(d) }; o.unchanged = d.more() ? d.bool() : false; return o; },
);

/** EncodeInput: the whole request (all parts), then the v1.4 extras section. */
export const EncodeInput = msg(
  (e, x) => {
    meta.enc(e, x.meta); route.enc(e, x.route); encRequestParts(e, x.request, Part.All); e.bool(x.pristine);
    encRequestExtras(e, x.request, Part.All);
  },
  (d) => {
    const o = { meta: meta.dec(d), route: route.dec(d), request: decRequestParts(d).request, pristine: d.bool() };
    decRequestExtras(d, o.request, Part.All);
    return o;
  },
);
/**
 * EncodeResult: v1.3 appended call.bodyMerge and call.verifySuccess after the error (only with a call);
 * v1.4 appended degraded (a list of strings, written only when not empty).
 */
export const EncodeResult = msg(
  (e, x) => {
    opt(upstreamCall).enc(e, x.call); opt(response).enc(e, x.local); opt(error).enc(e, x.error);
    if (x.call) { e.raw(x.call.bodyMerge); e.bool(x.call.verifySuccess); }
    if (x.degraded?.length) list(string, 1).enc(e, x.degraded);
  },
  (d) => {
    const call = opt(upstreamCall).dec(d);
    const local = opt(response).dec(d);
    const err = opt(error).dec(d);
    if (call) {
      call.bodyMerge = null; call.verifySuccess = false;
      if (d.more()) { call.bodyMerge = d.raw(); call.verifySuccess = d.bool(); }
    }
    const degraded = d.more() ? list(string, 1).dec(d) : [];
    return { call, local, error: err, degraded };
  },
);
export const DecodeInput = fromStruct(struct([
  ['meta', meta], ['route', route], ['status', int], ['headers', kvs], ['body', raw],
]));
export const DecodeResult = fromStruct(struct([['response', opt(response)], ['error', opt(error)]]));
/** DecodeStreamInput: v1.3 appended the upstream's response headers. */
const decodeStreamInputHead = struct([
  ['meta', meta], ['route', route], ['events', list(sse, 2)], ['state', raw], ['final', bool],
]);
export const DecodeStreamInput = msg(
  (e, x) => { decodeStreamInputHead.enc(e, x); kvs.enc(e, x.headers); },
  (d) => { const o = decodeStreamInputHead.dec(d); o.headers = d.more() ? kvs.dec(d) : []; return o; },
);
export const DecodeStreamResult = fromStruct(struct([['events', events], ['state', raw], ['error', opt(error)]]));
