// Unit tests of the primitive codec in wire.mjs (the golden test covers messages).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as wire from '../host/wire.mjs';

const enc = (f) => { const e = new wire.Encoder(); f(e); return [...e.bytes().subarray(1)]; };
const dec = (bytes) => new wire.Decoder(new Uint8Array([wire.FORMAT_VERSION, ...bytes]));

test('uvarint: known encodings and exact round trips up to 2^64-1', () => {
  assert.deepEqual(enc((e) => e.uint(0)), [0]);
  assert.deepEqual(enc((e) => e.uint(127)), [0x7f]);
  assert.deepEqual(enc((e) => e.uint(128)), [0x80, 0x01]);
  assert.deepEqual(enc((e) => e.uint(300)), [0xac, 0x02]);
  assert.deepEqual(enc((e) => e.uint(2n ** 64n - 1n)), [...Array(9).fill(0xff), 0x01]);
  const values = [0, 1, 127, 128, 16383, 16384, 2 ** 49 - 1, 2 ** 49, 2 ** 53 - 1, 2n ** 53n, 2n ** 63n, 2n ** 64n - 1n];
  for (const v of values) {
    assert.equal(dec(enc((e) => e.uint(v))).uint(), v, `uint ${v}`);
    assert.equal(dec(enc((e) => e.uint(BigInt(v)))).uint(), v, `uint ${v} given as BigInt`);
  }
  assert.throws(() => enc((e) => e.uint(-1)), RangeError);
  assert.throws(() => enc((e) => e.uint(1.5)), RangeError);
  assert.throws(() => enc((e) => e.uint(2n ** 64n)), RangeError);
});

test('zig-zag varint: known encodings and int64 extremes', () => {
  assert.deepEqual(enc((e) => e.int(0)), [0]);
  assert.deepEqual(enc((e) => e.int(-1)), [1]);
  assert.deepEqual(enc((e) => e.int(1)), [2]);
  assert.deepEqual(enc((e) => e.int(-64)), [0x7f]);
  assert.deepEqual(enc((e) => e.int(64)), [0x80, 0x01]);
  const values = [0, 1, -1, 63, -64, 64, -65, 2 ** 52 - 1, -(2 ** 52), Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER,
    2n ** 53n, -(2n ** 53n) - 1n, 2n ** 63n - 1n, -(2n ** 63n)];
  for (const v of values) assert.equal(dec(enc((e) => e.int(v))).int(), v, `int ${v}`);
  // An unsafe Number is taken at its exact double value; it decodes as a BigInt.
  assert.equal(dec(enc((e) => e.int(2 ** 60))).int(), 2n ** 60n);
  assert.throws(() => enc((e) => e.int(2n ** 63n)), RangeError);
});

test('varint overflow and truncation are errors, like binary.Uvarint', () => {
  assert.throws(() => dec([...Array(9).fill(0xff), 0x02]).uint(), wire.WireError); // > 64 bits
  assert.throws(() => dec(Array(11).fill(0x80)).uint(), wire.WireError); // > 10 bytes
  assert.throws(() => dec([0x80, 0x80]).uint(), wire.WireError); // ends mid-varint
  assert.throws(() => dec([5, 0x61]).string(), wire.WireError); // string longer than the message
  assert.throws(() => dec([0x3f, 0x00]).float(), wire.WireError);
  assert.throws(() => dec([]).bool(), wire.WireError);
  assert.throws(() => dec([0xff, 0xff, 0x03]).count(1), wire.WireError); // count beyond the bytes left
});

test('format version byte is checked', () => {
  assert.throws(() => new wire.Decoder(new Uint8Array(0)), /truncated/);
  assert.throws(() => new wire.Decoder(new Uint8Array([2])), /format version 2, this side understands 1/);
  assert.throws(() => wire.LayerResult.decode(new Uint8Array([0, 1, 2])), wire.WireError);
});

test('floats are little-endian IEEE-754, bit-exact', () => {
  assert.deepEqual(enc((e) => e.float(1)), [0, 0, 0, 0, 0, 0, 0xf0, 0x3f]);
  for (const v of [0, -0, 0.1, -1e308, 5e-324, Infinity, -Infinity, NaN]) {
    assert.ok(Object.is(dec(enc((e) => e.float(v))).float(), v), `float ${v}`);
  }
});

test('strings are length-prefixed UTF-8; raw bytes decode to null when empty', () => {
  assert.deepEqual(enc((e) => e.string('é🌍')), [6, 0xc3, 0xa9, 0xf0, 0x9f, 0x8c, 0x8d]);
  assert.equal(dec(enc((e) => e.string('é🌍\u0000x'))).string(), 'é🌍\u0000x');
  assert.equal(dec(enc((e) => e.raw(null))).raw(), null);
  assert.equal(dec(enc((e) => e.raw(''))).raw(), null);
  assert.deepEqual(dec(enc((e) => e.raw('{"a":1}'))).raw(), new TextEncoder().encode('{"a":1}'));
  const big = 'x'.repeat(100_000); // the encoder grows past its initial buffer
  assert.equal(dec(enc((e) => e.string(big))).string(), big);
});

test('requestParts honors the mask: unselected parts are neither written nor read', () => {
  const request = { model: 'm', system: [{ type: 1, text: 's' }], messages: [{ role: 'user', content: [{ type: 1, text: 'hi' }] }],
    tools: [{ name: 't' }], toolChoice: '{"type":"auto"}', params: { maxTokens: 5 }, extra: '{}', stream: true };
  const all = wire.LayerRequest.decode(wire.LayerRequest.encode({ request }));
  assert.equal(all.request.model, 'm');
  assert.equal(all.request.params.maxTokens, 5);
  const some = wire.LayerRequest.encode({ request }, wire.Part.Messages);
  const got = wire.LayerRequest.decode(some).request;
  assert.deepEqual(got, { ...wire.zeroRequest(), stream: true, messages: all.request.messages });
  assert.ok(some.length < wire.LayerRequest.encode({ request }).length);
  // Nothing at all: just the mask and Stream after the meta.
  const none = wire.LayerRequest.encode({ request }, 0);
  assert.deepEqual(wire.LayerRequest.decode(none).request, { ...wire.zeroRequest(), stream: true });
});

test('wire.mjs and bardo-host.mjs have no Node imports (they must run in workerd)', () => {
  for (const f of ['wire.mjs', 'bardo-host.mjs']) {
    const src = readFileSync(new URL(`../host/${f}`, import.meta.url), 'utf8');
    assert.doesNotMatch(src, /from\s+['"]node:|require\(|import\(['"]node:/, f);
  }
});
