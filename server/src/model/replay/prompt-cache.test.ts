import Anthropic, { BadRequestError } from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CassetteInput } from './cassette';
import { startReplayServer, type ReplayServer } from './server';

/*
 * Usage numbers as the real SDK receives them from the replay server. Expected figures are
 * worked out here from the documented estimate: ceil(JSON characters / 4) per block, without
 * its cache_control.
 */

const SONNET = 'claude-sonnet-4-6';
const EPHEMERAL = { type: 'ephemeral' } as const;
const MINUTE = 60_000;

const tokens = (block: object): number => {
  const { cache_control: _ignored, ...rest } = { cache_control: undefined, ...block };
  return Math.ceil(JSON.stringify(rest).length / 4);
};

const script: CassetteInput = {
  turns: Array.from({ length: 6 }, (_, index) => ({ content: [{ type: 'text' as const, text: `answer ${index + 1}` }] })),
};

let now = 0;
let server: ReplayServer;
let session = 0;
beforeAll(async () => {
  server = await startReplayServer({ now: () => now });
});
afterAll(async () => {
  await server.close();
});

/** A fresh session (its own cache) and a function to send one request on it. */
function newConversation(): (body: Omit<Anthropic.MessageCreateParamsNonStreaming, 'max_tokens'>) => Promise<Anthropic.Usage> {
  const name = `cache-${++session}`;
  server.addCassette(name, script);
  const client = new Anthropic({ apiKey: `replay:${name}`, baseURL: server.url, maxRetries: 0 });
  return async (body) => (await client.messages.stream({ max_tokens: 256, ...body }).finalMessage()).usage;
}

const tool: Anthropic.Tool = {
  name: 'read_file',
  description: `Reads a file. ${'d'.repeat(2000)}`,
  input_schema: { type: 'object', properties: { path: { type: 'string' } } },
};
const system: Anthropic.TextBlockParam = { type: 'text', text: `You are Dockhand. ${'s'.repeat(3000)}`, cache_control: EPHEMERAL };
const ticket: Anthropic.TextBlockParam = { type: 'text', text: 'Fix the failing test. '.repeat(40) };
const text = (value: string): Anthropic.TextBlockParam => ({ type: 'text', text: value });
const cached = (block: Anthropic.TextBlockParam): Anthropic.TextBlockParam => ({ ...block, cache_control: EPHEMERAL });

describe('prompt caching usage', () => {
  it('reads, writes and bills input across 3 turns with moving breakpoints', async () => {
    const send = newConversation();
    const prefix = tokens(tool) + tokens(system);
    expect(prefix).toBeGreaterThan(1024);

    // Turn 1: nothing cached yet; everything up to the last breakpoint (the ticket) is written.
    const one = await send({ model: SONNET, tools: [tool], system: [system], messages: [{ role: 'user', content: [cached(ticket)] }] });
    expect(one).toMatchObject({
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: prefix + tokens(ticket),
      input_tokens: 0,
    });

    // Turn 2: the breakpoint moves to the newest user block; the lookback finds turn 1's entry.
    const reply1 = text('answer 1');
    const more = text('The test still fails with a TypeError. '.repeat(10));
    const two = await send({
      model: SONNET,
      tools: [tool],
      system: [system],
      messages: [
        { role: 'user', content: [ticket] },
        { role: 'assistant', content: [reply1] },
        { role: 'user', content: [cached(more)] },
      ],
    });
    expect(two).toMatchObject({
      cache_read_input_tokens: prefix + tokens(ticket),
      cache_creation_input_tokens: tokens(reply1) + tokens(more),
      input_tokens: 0,
    });

    // Turn 3: a block after the last breakpoint is plain input.
    const reply2 = text('answer 2');
    const marked = text('Here is the stack trace.');
    const tail = text('And one more thing that is not cached.');
    const three = await send({
      model: SONNET,
      tools: [tool],
      system: [system],
      messages: [
        { role: 'user', content: [ticket] },
        { role: 'assistant', content: [reply1] },
        { role: 'user', content: [more] },
        { role: 'assistant', content: [reply2] },
        { role: 'user', content: [cached(marked), tail] },
      ],
    });
    expect(three).toMatchObject({
      cache_read_input_tokens: prefix + tokens(ticket) + tokens(reply1) + tokens(more),
      cache_creation_input_tokens: tokens(reply2) + tokens(marked),
      input_tokens: tokens(tail),
    });
  });

  it('expires entries 5 minutes after their last use, a read refreshing the TTL', async () => {
    const send = newConversation();
    const body = { model: SONNET, tools: [tool], system: [system], messages: [{ role: 'user' as const, content: 'hello' }] };
    const prefix = tokens(tool) + tokens(system);
    now = 0;
    expect(await send(body)).toMatchObject({ cache_creation_input_tokens: prefix, cache_read_input_tokens: 0 });
    now = 4 * MINUTE;
    expect(await send(body)).toMatchObject({ cache_creation_input_tokens: 0, cache_read_input_tokens: prefix });
    now = 8 * MINUTE; // 8 minutes after the write, 4 after the read that refreshed it
    expect(await send(body)).toMatchObject({ cache_read_input_tokens: prefix });
    now = 13 * MINUTE + 1;
    expect(await send(body)).toMatchObject({ cache_creation_input_tokens: prefix, cache_read_input_tokens: 0 });
  });

  it('keeps a 1-hour breakpoint for an hour and reports it as a 1-hour write', async () => {
    const send = newConversation();
    const longSystem = { ...system, cache_control: { type: 'ephemeral', ttl: '1h' } } as const;
    const body = { model: SONNET, tools: [tool], system: [longSystem], messages: [{ role: 'user' as const, content: 'hello' }] };
    const prefix = tokens(tool) + tokens(system);
    now = 0;
    const first = await send(body);
    expect(first.cache_creation).toEqual({ ephemeral_1h_input_tokens: prefix, ephemeral_5m_input_tokens: 0 });
    now = 50 * MINUTE;
    expect(await send(body)).toMatchObject({ cache_read_input_tokens: prefix });
  });

  it('neither reads nor writes a prefix shorter than the minimum (1024, 2048 for Haiku)', async () => {
    const send = newConversation();
    const small = cached(text('short system prompt'));
    const tiny = await send({ model: SONNET, system: [small], messages: [{ role: 'user', content: 'hi' }] });
    expect(tiny).toMatchObject({ cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
    expect(tiny.input_tokens).toBe(tokens(small) + tokens(text('hi')));

    // About 1500 tokens: cacheable for Sonnet, too short for Haiku.
    const medium = cached(text('m'.repeat(6000)));
    const body = { system: [medium], messages: [{ role: 'user' as const, content: 'hi' }] };
    for (let round = 0; round < 2; round++) {
      const haiku = await send({ ...body, model: 'claude-haiku-4-5' });
      expect(haiku).toMatchObject({ cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
    }
    await send({ ...body, model: SONNET });
    expect(await send({ ...body, model: SONNET })).toMatchObject({ cache_read_input_tokens: tokens(medium) });
  });

  it('keeps caches apart per session and per model', async () => {
    const body = { system: [system], messages: [{ role: 'user' as const, content: 'hi' }] };
    const first = newConversation();
    await first({ ...body, model: SONNET });
    expect(await first({ ...body, model: 'claude-opus-4-8' })).toMatchObject({ cache_read_input_tokens: 0 });
    const second = newConversation();
    expect(await second({ ...body, model: SONNET })).toMatchObject({ cache_read_input_tokens: 0 });
  });

  it('refuses more than 4 breakpoints like the API does', async () => {
    const send = newConversation();
    const error = await send({
      model: SONNET,
      system: [cached(text('a')), cached(text('b')), cached(text('c'))],
      messages: [{ role: 'user', content: [cached(text('d')), cached(text('e'))] }],
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(String(error)).toContain('A maximum of 4 blocks with cache_control may be provided. Found 5.');
  });
});
