// The values of wasm/golden/golden_test.go, in JavaScript. Keep the two in step:
// wasm/test/golden.test.mjs checks that wire.mjs encodes each one to the bytes sdk/wire
// wrote into wasm/test/testdata/<name>.bin, and decodes those bytes back to it.
//
// Raw-bytes fields are written as strings (UTF-8) or Uint8Arrays; fields left
// out are zero values ('' / 0 / false / null / []).
import * as wire from '../host/wire.mjs';

const { Part, BlockType, EventType, DeltaKind, Has } = wire;

export const meta = {
  requestID: 'req-01J9Z',
  tenant: 'tenant-ü',
  session: 'sess/42',
  dialect: wire.Dialect.Anthropic,
  model: 'claude-sonnet-4',
  stream: true,
  annotations: [
    { key: 'route', value: 'fast' },
    { key: 'note', value: 'naïve café ☕ 日本語 🚀' },
  ],
};

const cacheControl = '{"type":"ephemeral","ttl":"1h"}';

export const request = {
  model: 'claude-sonnet-4',
  system: [{ type: BlockType.Text, text: 'You are terse.\nNo emojis 🙅.', cacheControl }],
  messages: [
    { role: 'user', name: 'alice', content: [
      { type: BlockType.Text, text: 'héllo wörld — 你好 👋🏽 \u0000 end' },
      { type: BlockType.Image, data: '{"type":"url","url":"https://example.com/a.png"}' },
    ] },
    { role: 'assistant', content: [
      { type: BlockType.Thinking, text: 'hmm…', signature: 'sig==' },
      { type: BlockType.ToolUse, id: 'toolu_1', name: 'get_weather', data: '{"city":"Zürich"}' },
    ] },
    { role: 'user', content: [
      { type: BlockType.ToolResult, id: 'toolu_1', text: 'error: timeout', isError: true, cacheControl },
      { type: BlockType.RedactedThinking, data: '"opaque"' },
      { type: BlockType.Other, data: '{"type":"future_block"}' },
    ] },
  ],
  tools: [
    { name: 'get_weather', description: 'Weather for a city.',
      schema: '{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}', cacheControl },
    { name: 'noop' },
  ],
  toolChoice: '{"type":"tool","name":"get_weather"}',
  params: {
    set: Has.Temperature | Has.TopP | Has.TopK | Has.MaxTokens | Has.Seed,
    maxTokens: 4096,
    temperature: 0.7,
    topP: 1.0000000000000002,
    topK: -40,
    seed: -9223372036854775808n, // math.MinInt64: outside the safe range, so a BigInt
    stop: ['\n\nHuman:', '終'],
  },
  stream: true,
  extra: '{"metadata":{"user_id":"u-1"},"service_tier":"auto"}',
};

// Unknown members at every nested level (the ABI v1.4 extras section).
const extrasRequest = {
  model: 'claude-opus-4-8',
  system: [{ type: BlockType.Text, text: 'sys', extra: '{"citations":[]}' }],
  messages: [
    { role: 'user', content: [{ type: BlockType.Text, text: 'q' }] },
    { role: 'system', extra: '{"cache_control":{"type":"ephemeral"}}', content: [
      { type: BlockType.Text, text: 'be brief ✂', extra: '{"x":1}' }] },
  ],
  tools: [{ name: 'Read', extra: '{"defer_loading":true}' }, { name: 'Edit' }],
};

const usage = { inputTokens: 2n ** 53n, outputTokens: 321, cacheReadTokens: -7, cacheWriteTokens: 9223372036854775807n };

export const response = {
  id: 'msg_01',
  model: 'claude-sonnet-4',
  content: [
    { type: BlockType.Text, text: 'Grüße 🌍' },
    { type: BlockType.ToolUse, id: 'toolu_2', name: 'get_weather', data: '{"city":"Oslo"}' },
  ],
  stopReason: 'tool_use',
  usage,
};

const apiError = { status: 429, kind: 'rate_limit', message: 'slow down — ⏳', retryable: true, retryAfterMs: -1 };

const events = [
  { type: EventType.MessageStart, id: 'msg_01', model: 'claude-sonnet-4', usage: { inputTokens: 12 } },
  { type: EventType.BlockStart, index: 0, block: { type: BlockType.Text, cacheControl } },
  { type: EventType.Delta, index: 0, delta: DeltaKind.Text, text: 'Hi ✋' },
  { type: EventType.Delta, index: -1, delta: DeltaKind.InputJSON, text: '{"ci' },
  { type: EventType.MessageDelta, stopReason: 'stop_sequence', stopSeq: '終', usage: { outputTokens: 5 } },
  { type: EventType.Error, error: apiError },
];

const route = { provider: 'anthropic', model: 'claude-sonnet-4-20250514', baseURL: 'https://api.anthropic.com' };

/** name → [codec, value, ...extra encode arguments] */
export const fixtures = {
  descriptor: [wire.Descriptor, { abi: 1, name: 'hostcalls', version: '1.0.0', kind: 'layer',
    phases: wire.Phase.Request | wire.Phase.Stream, reads: Part.Messages | Part.Params, writes: Part.Messages }],
  layer_request: [wire.LayerRequest, { meta, request }],
  // Only the parts in the mask are on the wire; the others decode as zero values.
  layer_request_parts: [wire.LayerRequest,
    { meta, request: { messages: request.messages, params: request.params, stream: true } },
    Part.Messages | Part.Params],
  layer_result: [wire.LayerResult, {
    action: wire.Action.Answer,
    patched: Part.System | Part.Messages | Part.Tools | Part.Extra,
    request: { system: request.system, messages: request.messages.slice(0, 1), tools: request.tools,
      toolChoice: request.toolChoice, extra: request.extra, stream: true },
    answer: response,
    error: apiError,
    headers: [{ key: 'X-Bardo-Cache', value: 'hit' }],
    annotations: [{ key: 'cache.key', value: 'ab12' }],
  }],
  layer_result_continue: [wire.LayerResult, {}],
  layer_request_extras: [wire.LayerRequest, { meta, request: extrasRequest }],
  layer_result_extras: [wire.LayerResult, {
    patched: Part.Messages | Part.Tools,
    request: { messages: extrasRequest.messages, tools: extrasRequest.tools },
  }],
  layer_response: [wire.LayerResponse, { meta, response }],
  layer_response_result: [wire.LayerResponseResult,
    { replaced: true, response, headers: [{ key: 'X-Bardo-Filter', value: 'redacted' }] }],
  layer_response_result_kept: [wire.LayerResponseResult, { headers: [{ key: 'X-Bardo-Seen', value: '1' }] }],
  layer_stream: [wire.LayerStream, { meta, events, state: new Uint8Array([0, 1, 2, 0xff]), final: true }],
  layer_stream_result: [wire.LayerStreamResult, { events: events.slice(1, 3), state: 'state' }],
  descriptor_flags: [wire.Descriptor, { abi: 1, name: 'affinity', version: '1.0.0', kind: 'layer',
    phases: wire.Phase.Request | wire.Phase.Response | wire.Phase.Stream, reads: Part.All, writes: 0, flags: wire.Flag.WatchStream }],
  layer_result_skip: [wire.LayerResult, { annotations: [{ key: 'k', value: 'v' }], skipAnswer: true }],
  layer_stream_unchanged_ok: [wire.LayerStream, { meta, events: events.slice(0, 2), final: true, unchangedOK: true }],
  layer_stream_result_unchanged: [wire.LayerStreamResult, { state: 'st', unchanged: true }],
  encode_input: [wire.EncodeInput, { meta, route, request, pristine: true }],
  encode_result: [wire.EncodeResult, {
    call: {
      method: 'POST', url: 'https://api.anthropic.com/v1/messages',
      headers: [{ key: 'x-api-key', value: '${credential}' }, { key: 'anthropic-version', value: '2023-06-01' }],
      bodyMode: 0, bodyDialect: wire.Dialect.Anthropic, body: '{"model":"x"}',
      stream: true, responseDialect: wire.Dialect.Anthropic,
      bodyMerge: '{"provider":{"sort":"price"}}', verifySuccess: true,
    },
    error: apiError,
  }],
  encode_result_local: [wire.EncodeResult, { local: response }],
  encode_result_degraded: [wire.EncodeResult, {
    call: { method: 'POST', url: 'https://g/v1beta/models/x:generateContent' },
    degraded: ['system-as-user', 'naïve'],
  }],
  decode_input: [wire.DecodeInput, { meta, route, status: 529,
    headers: [{ key: 'content-type', value: 'application/json' }], body: '{"type":"error"}' }],
  decode_result: [wire.DecodeResult, { response, error: apiError }],
  decode_stream_input: [wire.DecodeStreamInput, { meta, route,
    events: [{ event: 'message_start', data: '{"type":"message_start"}' }, { event: '', data: null }],
    state: new Uint8Array([9]), final: false, headers: [{ key: 'x-venice-retention', value: 'none' }] }],
  decode_stream_result: [wire.DecodeStreamResult, { events, state: null, error: apiError }],
};
