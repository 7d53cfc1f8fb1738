// Cross-implementation check: wire.mjs against the bytes sdk/wire wrote
// (wasm/golden/golden_test.go → testdata/*.bin).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { fixtures } from '../golden/fixtures.mjs';

const testdata = new URL('./testdata/', import.meta.url);
const utf8 = new TextEncoder();

const isZero = (v) => v === '' || v === 0 || v === false || v === null ||
  (Array.isArray(v) && v.length === 0) ||
  (typeof v === 'object' && !(v instanceof Uint8Array) && Object.values(v).every(isZero));

/**
 * Asserts that a decoded value matches a fixture value: fields the fixture
 * leaves out must be zero, strings stand for raw bytes, and every field the
 * fixture names must exist in the decoded value (a misnamed field fails).
 */
function assertMatches(actual, expected, path = '$') {
  if (expected === undefined) {
    assert.ok(isZero(actual), `${path}: expected a zero value, got ${String(actual)}`);
  } else if (actual instanceof Uint8Array || (actual === null && (typeof expected === 'string' || expected instanceof Uint8Array))) {
    const want = typeof expected === 'string' ? utf8.encode(expected) : expected;
    if (want.length === 0) assert.equal(actual, null, `${path}: empty raw bytes decode to null`);
    else assert.deepEqual(actual, want, `${path}: raw bytes differ`);
  } else if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual), `${path}: expected an array`);
    assert.equal(actual.length, expected.length, `${path}: length`);
    expected.forEach((x, i) => assertMatches(actual[i], x, `${path}[${i}]`));
  } else if (expected !== null && typeof expected === 'object') {
    assert.ok(actual !== null && typeof actual === 'object', `${path}: expected an object, got ${actual}`);
    for (const k of Object.keys(expected)) assert.ok(k in actual, `${path}.${k}: no such field in the decoded value`);
    for (const k of Object.keys(actual)) assertMatches(actual[k], expected[k], `${path}.${k}`);
  } else {
    assert.equal(actual, expected, `${path}`); // strict: a BigInt is not a Number
  }
}

test('every Go fixture has a JS twin and vice versa', () => {
  const bins = readdirSync(testdata).filter((f) => f.endsWith('.bin')).map((f) => f.slice(0, -4)).sort();
  assert.deepEqual(bins, Object.keys(fixtures).sort());
});

for (const [name, [codec, value, ...args]] of Object.entries(fixtures)) {
  test(`golden ${name}`, () => {
    const golden = new Uint8Array(readFileSync(new URL(`${name}.bin`, testdata)));
    // JS encodes the same value to the same bytes as Go.
    assert.deepEqual(codec.encode(value, ...args), golden, 'wire.mjs encodes differently from sdk/wire');
    // JS decodes Go's bytes back to the value.
    const decoded = codec.decode(golden);
    assertMatches(decoded, value);
    // And a decoded value re-encodes to the same bytes.
    assert.deepEqual(codec.encode(decoded, ...args), golden);
  });
}
