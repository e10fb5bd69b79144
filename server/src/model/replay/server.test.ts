import Anthropic, {
  APIError,
  AuthenticationError,
  BadRequestError,
  InternalServerError,
  OverloadedError,
  RateLimitError,
} from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CassetteInput } from './cassette';
import { startReplayServer, type ReplayServer } from './server';

const MODEL = 'claude-sonnet-4-6';

const fixTests: CassetteInput = {
  turns: [
    {
      name: 'run the tests',
      content: [
        { type: 'text', text: 'I will run the failing tests first to see what is broken.' },
        { type: 'tool_use', name: 'run_tests', input: { paths: ['src/math.test.ts', 'src/text.test.ts'], verbose: true } },
      ],
    },
    {
      name: 'fix',
      expect: { toolResultContains: '2 failed' },
      content: [{ type: 'tool_use', name: 'edit_file', input: { path: 'src/math.ts', old: 'a - b', new: 'a + b' } }],
    },
    { name: 'done', content: [{ type: 'text', text: 'Fixed the sign error in add().' }] },
  ],
};

let server: ReplayServer;
beforeAll(async () => {
  server = await startReplayServer({ cassettes: { fix: fixTests } });
});
afterAll(async () => {
  await server.close();
});

function sdk(session: string, options: Partial<ConstructorParameters<typeof Anthropic>[0]> = {}): Anthropic {
  return new Anthropic({ apiKey: `replay:${session}`, baseURL: server.url, maxRetries: 0, ...options });
}

const firstUser: Anthropic.MessageParam = { role: 'user', content: 'Fix the failing tests in src/.' };

function toolResult(message: Anthropic.Message, text: string): Anthropic.MessageParam[] {
  const toolUse = message.content.find((block) => block.type === 'tool_use');
  if (toolUse?.type !== 'tool_use') throw new Error('expected a tool_use block');
  return [
    { role: 'assistant', content: message.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: text }] },
  ];
}

describe('replay server with the real SDK', () => {
  it('streams a turn in the Messages wire format: text deltas, partial tool JSON in chunks, stop reason, usage', async () => {
    const stream = sdk('fix').messages.stream({ model: MODEL, max_tokens: 1024, messages: [firstUser] });
    const events: Anthropic.MessageStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const message = await stream.finalMessage();

    expect(events[0]?.type).toBe('message_start');
    expect(events.at(-2)?.type).toBe('message_delta');
    expect(events.at(-1)?.type).toBe('message_stop');
    const jsonChunks = events.flatMap((event) =>
      event.type === 'content_block_delta' && event.delta.type === 'input_json_delta' ? [event.delta.partial_json] : [],
    );
    expect(jsonChunks.filter((chunk) => chunk !== '').length).toBeGreaterThanOrEqual(3);
    expect(events.some((event) => event.type === 'content_block_delta' && event.delta.type === 'text_delta')).toBe(true);

    expect(message.stop_reason).toBe('tool_use');
    expect(message.model).toBe(MODEL);
    expect(message.content[0]).toMatchObject({ type: 'text', text: 'I will run the failing tests first to see what is broken.' });
    expect(message.content[1]).toMatchObject({
      type: 'tool_use',
      name: 'run_tests',
      input: { paths: ['src/math.test.ts', 'src/text.test.ts'], verbose: true },
    });
    expect(message.usage.input_tokens).toBeGreaterThan(0);
    expect(message.usage.output_tokens).toBeGreaterThan(1);
    expect(stream.request_id).toMatch(/^req_replay_/);
  });

  it('answers non-streaming requests with the same message', async () => {
    const message = await sdk('fix').messages.create({ model: MODEL, max_tokens: 1024, messages: [firstUser] });
    expect(message.type).toBe('message');
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content.map((block) => block.type)).toEqual(['text', 'tool_use']);
  });

  it('plays a tool-use round trip, turn by turn, checking the expectation on each tool result', async () => {
    const client = sdk('fix');
    const first = await client.messages.create({ model: MODEL, max_tokens: 1024, messages: [firstUser] });
    const afterTests = [firstUser, ...toolResult(first, 'FAIL src/math.test.ts\n2 failed, 5 passed')];
    const second = await client.messages.stream({ model: MODEL, max_tokens: 1024, messages: afterTests }).finalMessage();
    expect(second.content[0]).toMatchObject({ type: 'tool_use', name: 'edit_file', input: { path: 'src/math.ts' } });
    const third = await client.messages.create({
      model: MODEL,
      max_tokens: 1024,
      messages: [...afterTests, ...toolResult(second, 'edited src/math.ts')],
    });
    expect(third.stop_reason).toBe('end_turn');
    expect(third.content).toEqual([{ type: 'text', text: 'Fixed the sign error in add().', citations: null }]);

    // A repeated request (a retried turn) replays the same turn, decided by the request alone.
    const again = await client.messages.create({ model: MODEL, max_tokens: 1024, messages: afterTests });
    expect(again.content[0]).toMatchObject({ type: 'tool_use', name: 'edit_file' });
  });

  it('finds the turn of an agent resumed from its log, even after old turns were compacted away', async () => {
    const first = await sdk('fix').messages.create({ model: MODEL, max_tokens: 1024, messages: [firstUser] });
    const afterTests = [firstUser, ...toolResult(first, '2 failed')];
    const second = await sdk('fix').messages.create({ model: MODEL, max_tokens: 1024, messages: afterTests });
    // A fresh SDK client (a restarted server) with a compacted history: a summary instead of the
    // first exchange, then the last assistant turn. Its tool_use id says which turn it was.
    const compacted: Anthropic.MessageParam[] = [
      { role: 'user', content: 'Summary: ran the tests, 2 failed in src/math.test.ts.' },
      ...toolResult(second, 'edited src/math.ts'),
    ];
    const resumed = await sdk('fix').messages.create({ model: MODEL, max_tokens: 1024, messages: compacted });
    expect(resumed.content[0]).toMatchObject({ type: 'text', text: 'Fixed the sign error in add().' });
  });

  it('fails an unmet expectation with a 400 that names it and shows what came instead', async () => {
    const client = sdk('fix');
    const first = await client.messages.create({ model: MODEL, max_tokens: 1024, messages: [firstUser] });
    const error = await client.messages
      .create({ model: MODEL, max_tokens: 1024, messages: [firstUser, ...toolResult(first, '7 passed')] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BadRequestError);
    const badRequest = error instanceof BadRequestError ? error : undefined;
    expect(badRequest?.type).toBe('invalid_request_error');
    expect(badRequest?.apiMessage).toContain('toolResultContains "2 failed" not met');
    expect(badRequest?.apiMessage).toContain('"7 passed"');
    expect(badRequest?.apiMessage).toContain('fix');
  });

  it('says so when the agent goes past the end of the cassette', async () => {
    const error = await sdk('fix')
      .messages.create({
        model: MODEL,
        max_tokens: 64,
        messages: [
          firstUser,
          { role: 'assistant', content: 'a' },
          { role: 'user', content: 'b' },
          { role: 'assistant', content: 'c' },
          { role: 'user', content: 'd' },
          { role: 'assistant', content: 'e' },
          { role: 'user', content: 'f' },
        ],
      })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(String(error)).toContain('the cassette has 3 turns but the request asks for turn 4');
  });

  it('picks a oneOf alternative by the last tool result', async () => {
    server.addCassette('branch', {
      turns: [
        { content: [{ type: 'tool_use', name: 'run_tests', input: {} }] },
        {
          oneOf: [
            { name: 'red', when: { toolResultMatches: '\\d+ failed' }, content: [{ type: 'text', text: 'fixing' }] },
            { name: 'green', content: [{ type: 'text', text: 'all green' }] },
          ],
        },
      ],
    });
    const client = sdk('branch');
    const first = await client.messages.create({ model: MODEL, max_tokens: 64, messages: [firstUser] });
    const red = await client.messages.create({ model: MODEL, max_tokens: 64, messages: [firstUser, ...toolResult(first, '3 failed')] });
    const green = await client.messages.create({ model: MODEL, max_tokens: 64, messages: [firstUser, ...toolResult(first, 'ok')] });
    expect(red.content[0]).toMatchObject({ text: 'fixing' });
    expect(green.content[0]).toMatchObject({ text: 'all green' });
  });

  it('selects the cassette by header, by API key, and refuses an unknown session naming the known ones', async () => {
    server.addCassette('other', { turns: [{ content: [{ type: 'text', text: 'from other' }] }] });
    const byKey = await sdk('other').messages.create({ model: MODEL, max_tokens: 64, messages: [firstUser] });
    expect(byKey.content[0]).toMatchObject({ text: 'from other' });
    const byHeader = await new Anthropic({
      apiKey: 'sk-anything',
      baseURL: server.url,
      maxRetries: 0,
      defaultHeaders: { 'x-replay-session': 'other' },
    }).messages.create({ model: MODEL, max_tokens: 64, messages: [firstUser] });
    expect(byHeader.content[0]).toMatchObject({ text: 'from other' });

    const error = await sdk('nope').messages.create({ model: MODEL, max_tokens: 64, messages: [firstUser] }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AuthenticationError);
    const apiMessage = error instanceof AuthenticationError ? error.apiMessage : '';
    expect(apiMessage).toContain('no replay cassette for session "nope"');
    expect(apiMessage).toContain('known sessions: fix, branch, other');
  });

  it('rejects a malformed request like the API does, naming the field', async () => {
    const response = await fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'replay:fix' },
      body: JSON.stringify({ model: MODEL, messages: [firstUser] }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining('max_tokens') } });
  });

  it('counts tokens and lists models', async () => {
    const client = sdk('fix');
    const count = await client.messages.countTokens({ model: MODEL, messages: [{ role: 'user', content: 'x'.repeat(400) }] });
    // One text block: {"type":"text","text":"xxx…"} is 400 + 25 characters → ceil(425 / 4).
    expect(count.input_tokens).toBe(107);
    const models = await client.models.list();
    expect(models.data.map((model) => model.id)).toContain('claude-sonnet-4-6');
  });
});

describe('replay faults', () => {
  const cassette = (faults: NonNullable<Extract<CassetteInput['turns'][number], { content: unknown }>['faults']>): CassetteInput => ({
    turns: [{ faults, content: [{ type: 'text', text: 'the answer after the fault, long enough for several deltas' }] }],
  });

  it('429 rate_limit_error with retry-after and request-id, then the turn plays', async () => {
    server.addCassette('f429', cassette([{ kind: 'rate_limit', retryAfterSeconds: 7 }]));
    const client = sdk('f429');
    const error = await client.messages.create({ model: MODEL, max_tokens: 64, messages: [firstUser] }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RateLimitError);
    const rateLimit = error instanceof RateLimitError ? error : undefined;
    expect(rateLimit?.type).toBe('rate_limit_error');
    expect(rateLimit?.headers.get('retry-after')).toBe('7');
    expect(rateLimit?.requestID).toMatch(/^req_replay_/);
    const message = await client.messages.create({ model: MODEL, max_tokens: 64, messages: [firstUser] });
    expect(message.stop_reason).toBe('end_turn');
  });

  it('529 overloaded_error and 500 api_error, in order, each once', async () => {
    server.addCassette('f5xx', cassette([{ kind: 'overloaded' }, { kind: 'api_error' }]));
    const client = sdk('f5xx');
    const request = (): Promise<unknown> =>
      client.messages.create({ model: MODEL, max_tokens: 64, messages: [firstUser] }).catch((caught: unknown) => caught);
    const overloaded = await request();
    expect(overloaded).toBeInstanceOf(OverloadedError);
    expect(overloaded instanceof APIError ? overloaded.type : undefined).toBe('overloaded_error');
    const internal = await request();
    expect(internal).toBeInstanceOf(InternalServerError);
    expect(internal instanceof APIError ? [internal.status, internal.type] : undefined).toEqual([500, 'api_error']);
    expect(await request()).toMatchObject({ type: 'message' });
    expect(server.requests('f5xx').map((record) => [record.status, record.fault])).toEqual([
      [529, 'overloaded'],
      [500, 'api_error'],
      [200, undefined],
    ]);
  });

  it('cut: the stream dies after a few deltas and the SDK never yields a final message', async () => {
    server.addCassette('cut', cassette([{ kind: 'cut', afterDeltas: 1 }, { kind: 'cut', afterDeltas: 2, mode: 'end' }]));
    const client = sdk('cut');
    for (const expected of [1, 2]) {
      const texts: string[] = [];
      const stream = client.messages.stream({ model: MODEL, max_tokens: 64, messages: [firstUser] });
      stream.on('text', (text) => texts.push(text));
      await expect(stream.finalMessage()).rejects.toThrow();
      expect(texts.length).toBe(expected);
    }
    const whole = await client.messages.stream({ model: MODEL, max_tokens: 64, messages: [firstUser] }).finalMessage();
    expect(whole.content[0]).toMatchObject({ text: 'the answer after the fault, long enough for several deltas' });
  });

  it('stream_error: an SSE error event mid-stream surfaces as an overloaded APIError', async () => {
    server.addCassette('sse', cassette([{ kind: 'stream_error', afterDeltas: 1 }]));
    const error = await sdk('sse')
      .messages.stream({ model: MODEL, max_tokens: 64, messages: [firstUser] })
      .finalMessage()
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(APIError);
    expect(error instanceof APIError ? error.type : undefined).toBe('overloaded_error');
  });

  it('a fault limited to one model hits only that model', async () => {
    server.addCassette('storm', cassette([{ kind: 'overloaded', times: 50, model: 'claude-sonnet' }]));
    const client = sdk('storm');
    await expect(client.messages.create({ model: MODEL, max_tokens: 64, messages: [firstUser] })).rejects.toBeInstanceOf(OverloadedError);
    const haiku = await client.messages.create({ model: 'claude-haiku-4-5', max_tokens: 64, messages: [firstUser] });
    expect(haiku.model).toBe('claude-haiku-4-5');
  });
});
