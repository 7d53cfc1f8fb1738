// The npm openai SDK's Responses API (responses.create, responses.stream,
// retrieve, delete, previous_response_id) against a running gateway; run
// by TestNodeSDKs (host/gateway/sdktest/node_test.go), which sets
// GATEWAY_URL. The gateway speaks Responses to the caller and each
// upstream's own dialect upstream.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';

import OpenAI from 'openai';

const GATEWAY_URL = process.env.GATEWAY_URL;
const skip = GATEWAY_URL ? false : 'GATEWAY_URL is not set: run through go test -run TestNodeSDKs ./host/gateway/sdktest/';

const openai = new OpenAI({ apiKey: 'sk-client-anything', baseURL: `${GATEWAY_URL}/v1`, maxRetries: 0, timeout: 20_000 });

const upstreams = [
  { name: 'openai-upstream', model: 'gpt-4o', provider: 'up' },
  { name: 'anthropic-upstream', model: 'claude-sonnet-5-5', provider: 'claude' },
  // Speaks the Responses API itself: requests and answers are relayed.
  { name: 'responses-upstream', model: 'o5-mini', provider: 'resp', relayed: true },
];

// Streamed tests run against every upstream, the relayed Responses one
// included (its stream ends at response.completed, which the relay knows).
const streamTest = () => test;

const tokens = (s) => Math.ceil(Buffer.byteLength(s) / 4);

const weatherTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Get the weather forecast for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};
const weatherResult = '{"temp_c":18,"sky":"clear"}';

for (const up of upstreams) {
  describe(`openai SDK responses -> ${up.name}`, { skip }, () => {
    test('responses.create, retrieve, chain, delete', async () => {
      const prompt = 'hello from the node responses API, ünïcode';
      const { data, response } = await openai.responses
        .create({ model: up.model, instructions: 'Be brief.', input: prompt, max_output_tokens: 200 })
        .withResponse();
      assert.equal(response.headers.get('x-bardo-provider'), up.provider);
      assert.match(response.headers.get('x-bardo-request-id'), /^req_/);
      assert.match(data.id, /^resp_/);
      assert.equal(data.object, 'response');
      assert.equal(data.status, 'completed');
      assert.equal(data.output_text, `echo: ${prompt}`);
      assert.equal(data.usage.input_tokens, tokens('Be brief.' + prompt));
      assert.equal(data.usage.output_tokens, tokens(`echo: ${prompt}`));

      const got = await openai.responses.retrieve(data.id);
      assert.equal(got.id, data.id);
      assert.equal(got.output_text, data.output_text);

      const next = await openai.responses.create({ model: up.model, previous_response_id: data.id, input: 'and again' });
      assert.equal(next.previous_response_id, data.id);
      assert.equal(next.output_text, 'echo: and again');

      await openai.responses.delete(next.id);
      await assert.rejects(openai.responses.retrieve(next.id), (err) => err.status === 404);
    });

    streamTest(up)('responses.stream', async () => {
      const prompt = 'one two three four five six seven eight';
      const stream = openai.responses.stream({ model: up.model, input: prompt });
      const types = [];
      let text = '';
      for await (const ev of stream) {
        types.push(ev.type);
        if (ev.type === 'response.output_text.delta') text += ev.delta;
      }
      const final = await stream.finalResponse();
      assert.equal(text, `echo: ${prompt}`);
      assert.equal(final.output_text, `echo: ${prompt}`);
      assert.equal(final.status, 'completed');
      assert.equal(final.usage.output_tokens, tokens(`echo: ${prompt}`));
      for (const want of ['response.created', 'response.output_item.added', 'response.content_part.added',
        'response.output_text.done', 'response.output_item.done', 'response.completed']) {
        assert.ok(types.includes(want), `no ${want} in ${types}`);
      }
      const stored = await openai.responses.retrieve(final.id);
      assert.equal(stored.output_text, final.output_text);
    });

    streamTest(up)('function call round trip, streamed', async () => {
      // An earlier exchange first, so this tool round trip is not one of
      // the chat tests' three-message turns TestNodeSDKs counts.
      const input = [
        { role: 'user', content: 'Hi.' },
        { role: 'assistant', content: 'Hello.' },
        { role: 'user', content: 'Weather in Paris? fake:tool=get_weather' },
      ];
      const stream = openai.responses.stream({ model: up.model, input, tools: [weatherTool] });
      const final = await stream.finalResponse();
      const call = final.output.find((it) => it.type === 'function_call');
      assert.ok(call, JSON.stringify(final.output));
      assert.equal(call.name, 'get_weather');
      assert.ok(call.call_id);
      JSON.parse(call.arguments);

      const answer = await openai.responses.create({
        model: up.model,
        input: [...input, call, { type: 'function_call_output', call_id: call.call_id, output: weatherResult }],
        tools: [weatherTool],
        store: false,
      });
      assert.equal(answer.output_text, `echo: ${weatherResult}`);
    });

    test('structured output', async () => {
      const schema = { type: 'object', properties: { echo: { type: 'string' } }, required: ['echo'] };
      const r = await openai.responses.create({
        model: up.model,
        // The fake answers a forced tool with these arguments (Anthropic,
        // where text.format becomes a forced tool) and echoes otherwise.
        input: up.provider === 'claude' ? 'structured fake:tool=answer fake:args={"echo":"x"}' : 'structured',
        text: { format: { type: 'json_schema', name: 'answer', schema, strict: true } },
        store: false,
      });
      if (up.provider === 'claude') {
        assert.deepEqual(JSON.parse(r.output_text), { echo: 'x' });
      } else {
        assert.equal(r.output_text, 'echo: structured');
      }
    });

    streamTest(up)('cut stream', async () => {
      // The upstream closes the connection mid-stream: the SDK must not
      // see a completed response; it gets the error event (which it
      // throws) or response.failed.
      const stream = openai.responses.stream({ model: up.model, input: 'one two three four five six seven eight fake:cut=3', store: false });
      const types = [];
      let thrown = null;
      try {
        for await (const ev of stream) types.push(ev.type);
      } catch (err) {
        thrown = err;
      }
      assert.ok(!types.includes('response.completed'), `completed after a cut: ${types}`);
      assert.ok(thrown || types.at(-1) === 'response.failed', `neither an error nor response.failed: ${types}`);
      if (thrown) assert.match(String(thrown.message ?? thrown), /broke off|stream/i);
    });

    test('errors', async () => {
      // A hosted tool the model may use is dropped (and named) for a Chat
      // or Anthropic upstream and relayed to a Responses one; forcing one
      // is refused (the gateway decides before it routes).
      const { response } = await openai.responses
        .create({ model: up.model, input: 'search', tools: [{ type: 'web_search' }], store: false })
        .withResponse();
      if (up.relayed) {
        assert.equal(response.headers.get('x-bardo-degraded'), null);
      } else {
        assert.match(response.headers.get('x-bardo-degraded'), /tools\[web_search\]/);
      }
      await assert.rejects(
        openai.responses.create({ model: up.model, input: 'search', tools: [{ type: 'web_search' }], tool_choice: { type: 'web_search' } }),
        (err) => err.status === 400 && /web_search/.test(err.message),
      );
      await assert.rejects(
        openai.responses.create({ model: up.model, input: 'x', previous_response_id: 'resp_nope' }),
        (err) => err.status === 400 && /resp_nope/.test(err.message),
      );
    });
  });
}
