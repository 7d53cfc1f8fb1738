// The official node SDKs (openai, @anthropic-ai/sdk) against a running
// gateway whose fake upstream answers by magic phrases. The gateway and the
// fake are started by the Go test TestNodeSDKs (host/gateway/sdktest), which
// sets GATEWAY_URL and checks what reached the upstream:
//
//   go test -count=1 -run TestNodeSDKs ./host/gateway/sdktest/
//
// Routing: gpt-* goes to an OpenAI upstream, claude-* to an Anthropic one.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';

import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const GATEWAY_URL = process.env.GATEWAY_URL;
const skip = GATEWAY_URL ? false : 'GATEWAY_URL is not set: run through go test -run TestNodeSDKs ./host/gateway/sdktest/';

const openai = new OpenAI({ apiKey: 'sk-client-anything', baseURL: `${GATEWAY_URL}/v1`, maxRetries: 0, timeout: 20_000 });
const anthropic = new Anthropic({ apiKey: 'sk-client-anything', baseURL: GATEWAY_URL, maxRetries: 0, timeout: 20_000 });

const upstreams = [
  { name: 'openai-upstream', model: 'gpt-4o', provider: 'up' },
  { name: 'anthropic-upstream', model: 'claude-sonnet-5-5', provider: 'claude' },
];

// The fake upstream's tokenizer: ceil(bytes / 4).
const tokens = (s) => Math.ceil(Buffer.byteLength(s) / 4);

// The signature the fake upstream gives a thinking block.
const fakeSignature = (thinking) => {
  const sum = crypto.createHash('sha256').update(thinking).digest();
  return Buffer.concat([sum, sum]).toString('base64');
};

const weatherToolOpenAI = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the weather forecast for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const weatherToolAnthropic = {
  name: 'get_weather',
  description: 'Get the weather forecast for a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const weatherResult = '{"temp_c":18,"sky":"clear"}';

// Shared with TestNodeSDKs (node_test.go), which finds the follow-up at the
// upstream and checks the signature arrived byte for byte.
const THINKING_PROMPT = 'fake:thinking node thinking prompt';
const THINKING_FOLLOW_UP = 'node-thinking-roundtrip';

for (const up of upstreams) {
  describe(`openai SDK -> ${up.name}`, { skip }, () => {
    test('chat.completions.create', async () => {
      const prompt = 'hello from the node openai SDK, ünïcode';
      const { data, response } = await openai.chat.completions
        .create({ model: up.model, messages: [{ role: 'user', content: prompt }] })
        .withResponse();
      assert.equal(response.headers.get('x-bardo-provider'), up.provider);
      assert.equal(data.object, 'chat.completion');
      assert.equal(data.model, up.model);
      assert.equal(data.choices.length, 1);
      assert.equal(data.choices[0].message.role, 'assistant');
      assert.equal(data.choices[0].message.content, `echo: ${prompt}`);
      assert.equal(data.choices[0].finish_reason, 'stop');
      assert.equal(data.usage.prompt_tokens, tokens(prompt));
      assert.equal(data.usage.completion_tokens, tokens(`echo: ${prompt}`));
    });

    test('chat.completions.create stream', async () => {
      const prompt = 'one two three four five six seven eight';
      const stream = await openai.chat.completions.create({
        model: up.model,
        messages: [{ role: 'user', content: prompt }],
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      let finish = null;
      let usage = null;
      let chunks = 0;
      for await (const chunk of stream) {
        chunks++;
        if (chunk.usage) usage = chunk.usage;
        const choice = chunk.choices[0];
        if (!choice) continue;
        text += choice.delta.content ?? '';
        finish = choice.finish_reason ?? finish;
      }
      assert.ok(chunks >= 3, `only ${chunks} chunks`);
      assert.equal(text, `echo: ${prompt}`);
      assert.equal(finish, 'stop');
      assert.ok(usage, 'no usage chunk with include_usage');
      assert.equal(usage.prompt_tokens, tokens(prompt));
      assert.equal(usage.completion_tokens, tokens(`echo: ${prompt}`));
    });

    test('tool call, then its result', async () => {
      const prompt = 'Weather in Paris? fake:tool=get_weather';
      const messages = [{ role: 'user', content: prompt }];
      const first = await openai.chat.completions.create({ model: up.model, messages, tools: [weatherToolOpenAI] });
      const choice = first.choices[0];
      assert.equal(choice.finish_reason, 'tool_calls');
      assert.equal(choice.message.tool_calls.length, 1);
      const call = choice.message.tool_calls[0];
      assert.equal(call.type, 'function');
      assert.equal(call.function.name, 'get_weather');
      assert.deepEqual(JSON.parse(call.function.arguments), { query: prompt });
      assert.ok(call.id);

      messages.push(choice.message, { role: 'tool', tool_call_id: call.id, content: weatherResult });
      const second = await openai.chat.completions.create({ model: up.model, messages, tools: [weatherToolOpenAI] });
      assert.equal(second.choices[0].message.content, `echo: ${weatherResult}`);
      assert.equal(second.choices[0].finish_reason, 'stop');
    });

    test('chat.completions.stream finalChatCompletion with a tool call', async () => {
      const prompt = 'Weather in Paris? fake:tool=get_weather';
      const stream = openai.chat.completions.stream({
        model: up.model,
        messages: [{ role: 'user', content: prompt }],
        tools: [weatherToolOpenAI],
        stream_options: { include_usage: true },
      });
      const done = [];
      stream.on('tool_calls.function.arguments.done', (ev) => done.push(ev));
      const final = await stream.finalChatCompletion();
      const choice = final.choices[0];
      assert.equal(choice.finish_reason, 'tool_calls');
      assert.equal(choice.message.tool_calls.length, 1);
      assert.equal(choice.message.tool_calls[0].function.name, 'get_weather');
      assert.deepEqual(JSON.parse(choice.message.tool_calls[0].function.arguments), { query: prompt });
      assert.equal(done.length, 1);
      assert.equal(done[0].name, 'get_weather');
      assert.deepEqual(done[0].parsed_arguments ?? JSON.parse(done[0].arguments), { query: prompt });
      assert.equal(final.usage?.prompt_tokens, tokens(prompt));
    });

    // retry-after=30 is beyond the gateway's retry cap: the 429 is the answer.
    test('upstream 429 is a RateLimitError', async () => {
      await assert.rejects(
        openai.chat.completions.create({ model: up.model, messages: [{ role: 'user', content: 'x fake:status=429 fake:retry-after=30' }] }),
        (err) => {
          assert.ok(err instanceof OpenAI.RateLimitError, `got ${err?.constructor?.name}: ${err}`);
          assert.equal(err.status, 429);
          assert.equal(err.headers.get('retry-after'), '30');
          return true;
        },
      );
    });
  });

  describe(`anthropic SDK -> ${up.name}`, { skip }, () => {
    test('messages.create', async () => {
      const prompt = 'hello from the node anthropic SDK, ünïcode';
      const { data, response } = await anthropic.messages
        .create({ model: up.model, max_tokens: 256, system: 'Be brief.', messages: [{ role: 'user', content: prompt }] })
        .withResponse();
      assert.equal(response.headers.get('x-bardo-provider'), up.provider);
      assert.equal(data.type, 'message');
      assert.equal(data.role, 'assistant');
      assert.equal(data.model, up.model);
      assert.deepEqual(data.content.map((b) => [b.type, b.text]), [['text', `echo: ${prompt}`]]);
      assert.equal(data.stop_reason, 'end_turn');
      assert.equal(data.usage.input_tokens, tokens('Be brief.' + prompt));
      assert.equal(data.usage.output_tokens, tokens(`echo: ${prompt}`));
    });

    test('messages.stream finalMessage', async () => {
      const prompt = 'one two three four five six seven eight';
      const stream = anthropic.messages.stream({ model: up.model, max_tokens: 256, messages: [{ role: 'user', content: prompt }] });
      let text = '';
      stream.on('text', (delta) => { text += delta; });
      const final = await stream.finalMessage();
      assert.equal(text, `echo: ${prompt}`);
      assert.deepEqual(final.content.map((b) => [b.type, b.text]), [['text', `echo: ${prompt}`]]);
      assert.equal(final.stop_reason, 'end_turn');
      assert.equal(final.usage.input_tokens, tokens(prompt));
      assert.equal(final.usage.output_tokens, tokens(`echo: ${prompt}`));
    });

    test('tool use, then its result (stream)', async () => {
      const prompt = 'Weather in Paris? fake:tool=get_weather';
      const messages = [{ role: 'user', content: prompt }];
      const first = await anthropic.messages
        .stream({ model: up.model, max_tokens: 256, messages, tools: [weatherToolAnthropic] })
        .finalMessage();
      assert.equal(first.stop_reason, 'tool_use');
      const uses = first.content.filter((b) => b.type === 'tool_use');
      assert.equal(uses.length, 1);
      assert.equal(uses[0].name, 'get_weather');
      assert.deepEqual(uses[0].input, { query: prompt });
      assert.ok(uses[0].id);

      messages.push(
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: uses[0].id, content: weatherResult }] },
      );
      const second = await anthropic.messages.create({ model: up.model, max_tokens: 256, messages, tools: [weatherToolAnthropic] });
      assert.deepEqual(second.content.map((b) => [b.type, b.text]), [['text', `echo: ${weatherResult}`]]);
      assert.equal(second.stop_reason, 'end_turn');
    });

    test('tool use (json)', async () => {
      const prompt = 'Weather in Paris? fake:tool=get_weather';
      const msg = await anthropic.messages.create({
        model: up.model, max_tokens: 256, messages: [{ role: 'user', content: prompt }], tools: [weatherToolAnthropic],
      });
      assert.equal(msg.stop_reason, 'tool_use');
      const uses = msg.content.filter((b) => b.type === 'tool_use');
      assert.equal(uses.length, 1);
      assert.equal(uses[0].name, 'get_weather');
      assert.deepEqual(uses[0].input, { query: prompt });
    });

    test('upstream 429 is a RateLimitError', async () => {
      await assert.rejects(
        anthropic.messages.create({ model: up.model, max_tokens: 16, messages: [{ role: 'user', content: 'x fake:status=429 fake:retry-after=30' }] }),
        (err) => {
          assert.ok(err instanceof Anthropic.RateLimitError, `got ${err?.constructor?.name}: ${err}`);
          assert.equal(err.status, 429);
          assert.equal(err.error?.error?.type, 'rate_limit_error');
          return true;
        },
      );
    });
  });
}

describe('anthropic SDK thinking -> anthropic-upstream', { skip }, () => {
  const model = 'claude-sonnet-5-5';
  const wantThinking = `Thinking about: ${THINKING_PROMPT}`;

  test('messages.stream finalMessage keeps thinking and signature; the turn goes back', async () => {
    const params = {
      model,
      max_tokens: 2048,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [{ role: 'user', content: THINKING_PROMPT }],
    };
    const first = await anthropic.messages.stream(params).finalMessage();
    assert.equal(first.content.length, 2);
    assert.equal(first.content[0].type, 'thinking');
    assert.equal(first.content[0].thinking, wantThinking);
    assert.equal(first.content[0].signature, fakeSignature(wantThinking));
    assert.equal(first.content[1].type, 'text');

    params.messages.push({ role: 'assistant', content: first.content }, { role: 'user', content: THINKING_FOLLOW_UP });
    const second = await anthropic.messages.create(params);
    assert.equal(second.content.at(-1).text, `echo: ${THINKING_FOLLOW_UP}`);
  });

  test('messages.create keeps thinking and signature', async () => {
    const msg = await anthropic.messages.create({
      model, max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [{ role: 'user', content: THINKING_PROMPT }],
    });
    assert.equal(msg.content[0].type, 'thinking');
    assert.equal(msg.content[0].thinking, wantThinking);
    assert.equal(msg.content[0].signature, fakeSignature(wantThinking));
  });
});

describe('bad requests', { skip }, () => {
  test('openai SDK: empty messages is a 400 BadRequestError', async () => {
    await assert.rejects(openai.chat.completions.create({ model: 'gpt-4o', messages: [] }), (err) => {
      assert.ok(err instanceof OpenAI.BadRequestError, `got ${err?.constructor?.name}: ${err}`);
      assert.equal(err.status, 400);
      assert.equal(err.type, 'invalid_request_error');
      return true;
    });
  });

  test('anthropic SDK: a model-less request is a 400 BadRequestError', async () => {
    await assert.rejects(anthropic.messages.create({ max_tokens: 16, messages: [{ role: 'user', content: 'x' }] }), (err) => {
      assert.ok(err instanceof Anthropic.BadRequestError, `got ${err?.constructor?.name}: ${err}`);
      assert.equal(err.status, 400);
      assert.equal(err.error?.error?.type, 'invalid_request_error');
      return true;
    });
  });
});
