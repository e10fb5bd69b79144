import type Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { DockhandError } from '../errors';
import { AnthropicModelClient, type AnthropicModelOptions } from './anthropic-client';
import { withHandBack, type HandBackRequest } from '../scheduler/hand-back';
import { costOf, pricesFor } from './pricing';
import type { CassetteInput } from './replay/cassette';
import { useReplayServer } from './replay/testing';
import type { FallbackNotice, ModelTurnRequest, RetryNotice } from './types';

/* AnthropicModelClient against the replay server, through the real SDK. */

const PRIMARY = 'claude-sonnet-4-6';
const FALLBACK = 'claude-haiku-4-5';
const ANSWER = 'The fix is to add the two numbers instead of subtracting them.';

const replay = useReplayServer('client');

interface Harness {
  client: AnthropicModelClient;
  session: string;
  sleeps: number[];
  retries: RetryNotice[];
  fallbacks: FallbackNotice[];
}

function harness(cassette: CassetteInput, options: Partial<AnthropicModelOptions> = {}): Harness {
  const session = replay.session(cassette);
  const sleeps: number[] = [];
  const retries: RetryNotice[] = [];
  const fallbacks: FallbackNotice[] = [];
  const client = new AnthropicModelClient({
    apiKey: `replay:${session}`,
    baseURL: replay.server.url,
    model: PRIMARY,
    maxTokens: 1024,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    random: () => 0.5,
    onRetry: (notice) => retries.push(notice),
    onFallback: (notice) => fallbacks.push(notice),
    ...options,
  });
  return { client, session, sleeps, retries, fallbacks };
}

const request = (messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Fix add().' }]): ModelTurnRequest => ({
  system: [{ type: 'text', text: 'You are Dockhand.' }],
  tools: [{ name: 'run_tests', description: 'Runs tests', input_schema: { type: 'object', properties: {} } }],
  messages,
});

const oneTurn = (faults: NonNullable<Extract<CassetteInput['turns'][number], { content: unknown }>['faults']>): CassetteInput => ({
  turns: [{ faults, content: [{ type: 'text', text: ANSWER }] }],
});

describe('AnthropicModelClient', () => {
  it('returns the complete message with its cost, streaming text as it arrives', async () => {
    const { client } = harness({
      turns: [
        { content: [{ type: 'text', text: 'Running tests.' }, { type: 'tool_use', name: 'run_tests', input: { scope: 'src' } }] },
        { expect: { toolResultContains: '1 failed' }, content: [{ type: 'text', text: ANSWER }] },
      ],
    });
    const deltas: string[] = [];
    const first = await client.turn({ ...request(), onTextDelta: (text) => deltas.push(text) });
    expect(deltas.join('')).toBe('Running tests.');
    expect(first.model).toBe(PRIMARY);
    expect(first.message.stop_reason).toBe('tool_use');
    expect(first.costUsd).toBeCloseTo(costOf(first.message.usage, pricesFor(PRIMARY)), 12);
    expect(first.costUsd).toBeGreaterThan(0);

    const toolUse = first.message.content[1];
    if (toolUse?.type !== 'tool_use') throw new Error('expected tool_use');
    expect(toolUse.input).toEqual({ scope: 'src' });
    const second = await client.turn(
      request([
        { role: 'user', content: 'Fix add().' },
        { role: 'assistant', content: first.message.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: '1 failed' }] },
      ]),
    );
    expect(second.message.content[0]).toMatchObject({ type: 'text', text: ANSWER });
  });

  it('retries a stream cut mid-turn as a whole turn and returns only the complete message', async () => {
    const { client, session, retries } = harness(oneTurn([{ kind: 'cut', afterDeltas: 1 }]));
    const deltas: string[] = [];
    const result = await client.turn({ ...request(), onTextDelta: (text) => deltas.push(text) });
    expect(result.message.content).toEqual([{ type: 'text', text: ANSWER, citations: null }]);
    expect(result.message.stop_reason).toBe('end_turn');
    expect(retries).toHaveLength(1);
    expect(retries[0]?.reason).toMatch(/^stream interrupted/);
    // The first attempt's partial text came through before the cut; the retry streamed all of it again.
    expect(deltas.join('').endsWith(ANSWER)).toBe(true);
    expect(deltas.join('').length).toBeGreaterThan(ANSWER.length);
    expect(replay.server.requests(session).map((record) => [record.position, record.fault])).toEqual([
      [0, 'cut'],
      [0, undefined],
    ]);
  });

  it('retries an SSE error event mid-stream', async () => {
    const { client, retries } = harness(oneTurn([{ kind: 'stream_error', afterDeltas: 1 }]));
    const result = await client.turn(request());
    expect(result.message.content[0]).toMatchObject({ text: ANSWER });
    expect(retries.map((notice) => notice.reason)).toEqual(['stream error overloaded_error']);
  });

  it('honours retry-after on 429 and backs off exponentially with jitter on 5xx', async () => {
    const { client, sleeps, retries } = harness(
      oneTurn([{ kind: 'rate_limit', retryAfterSeconds: 3 }, { kind: 'api_error' }, { kind: 'api_error' }]),
      { retry: { baseDelayMs: 1000, jitter: 0.5, fallbackAfter: 10 } },
    );
    const result = await client.turn(request());
    expect(result.message.content[0]).toMatchObject({ text: ANSWER });
    // 429: the server's 3 s. Then 2nd and 3rd failure on the model: 1000·2¹ and 1000·2² less 25 % (jitter 0.5 × random 0.5).
    expect(sleeps).toEqual([3000, 1500, 3000]);
    expect(retries.map((notice) => [notice.attempt, notice.reason])).toEqual([
      [1, '429 rate_limit_error'],
      [2, '500 api_error'],
      [3, '500 api_error'],
    ]);
  });

  it('switches to the fallback model in a 529 storm, tells onFallback, and stays there', async () => {
    const { client, session, fallbacks } = harness(
      {
        turns: [
          { faults: [{ kind: 'overloaded', times: 100, model: PRIMARY }], content: [{ type: 'text', text: 'first answer' }] },
          { faults: [{ kind: 'overloaded', times: 100, model: PRIMARY }], content: [{ type: 'text', text: ANSWER }] },
        ],
      },
      { fallbackModel: FALLBACK, retry: { fallbackAfter: 2 } },
    );
    const first = await client.turn(request());
    expect(fallbacks).toEqual([{ from: PRIMARY, to: FALLBACK, reason: '529 overloaded_error' }]);
    expect(first.model).toBe(FALLBACK);
    expect(first.message.model).toBe(FALLBACK);
    expect(first.costUsd).toBeCloseTo(costOf(first.message.usage, pricesFor(FALLBACK)), 12);
    expect(client.model).toBe(FALLBACK);

    const second = await client.turn(
      request([
        { role: 'user', content: 'Fix add().' },
        { role: 'assistant', content: first.message.content },
        { role: 'user', content: 'go on' },
      ]),
    );
    expect(second.message.content[0]).toMatchObject({ text: ANSWER });
    expect(replay.server.requests(session).map((record) => [record.position, record.model, record.status])).toEqual([
      [0, PRIMARY, 529],
      [0, PRIMARY, 529],
      [0, FALLBACK, 200],
      [1, FALLBACK, 200],
    ]);
    expect(fallbacks).toHaveLength(1);
  });

  it('with whenUnavailable "wait", keeps retrying the primary and fails after maxAttempts', async () => {
    const { client, session, fallbacks, sleeps } = harness(oneTurn([{ kind: 'overloaded', times: 100 }]), {
      fallbackModel: FALLBACK,
      retry: { maxAttempts: 4, whenUnavailable: 'wait', fallbackAfter: 1, baseDelayMs: 100, jitter: 0 },
    });
    const error = await client.turn(request()).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DockhandError);
    expect(error instanceof DockhandError ? error.code : undefined).toBe('model_unavailable');
    expect(String(error)).toContain('after 4 attempts: 529 overloaded_error');
    expect(fallbacks).toEqual([]);
    expect(sleeps).toEqual([100, 200, 400]);
    expect(replay.server.requests(session).every((record) => record.model === PRIMARY)).toBe(true);
    expect(replay.server.requests(session)).toHaveLength(4);
  });

  it('a model that refuses connections through every attempt hands the task back under a scheduler, saying when it is retried', async () => {
    // Nothing listens on port 1: each attempt is an ECONNREFUSED.
    const { client, retries, sleeps } = harness(oneTurn([]), {
      baseURL: 'http://127.0.0.1:1',
      retry: { maxAttempts: 3, baseDelayMs: 100, jitter: 0, handBackDelayMs: 20_000 },
    });
    const handedBack: HandBackRequest[] = [];
    const error = await withHandBack((request) => handedBack.push(request), () => client.turn(request())).catch((caught: unknown) => caught);
    expect(error instanceof DockhandError ? error.code : undefined).toBe('model_unavailable');
    expect(sleeps).toEqual([100, 200]);
    expect(retries.map((notice) => [notice.attempt, notice.of, notice.delayMs, notice.handBack ?? false])).toEqual([
      [1, 3, 100, false],
      [2, 3, 200, false],
      [3, 3, 20_000, true],
    ]);
    expect(retries.every((notice) => notice.reason.startsWith('connection error'))).toBe(true);
    expect(handedBack).toEqual([{ reason: expect.stringMatching(/unreachable after 3 attempts: connection error/), delayMs: 20_000 }]);
  });

  it('a 529 storm through every attempt hands back too; without a scheduler the turn fails as before', async () => {
    const storm = () => harness(oneTurn([{ kind: 'overloaded', times: 100 }]), { retry: { maxAttempts: 2, baseDelayMs: 1, jitter: 0 } });
    const handedBack: HandBackRequest[] = [];
    const under = storm();
    await withHandBack((request) => handedBack.push(request), () => under.client.turn(request())).catch(() => undefined);
    expect(handedBack).toHaveLength(1);
    expect(handedBack[0]?.reason).toContain('529 overloaded_error');
    const alone = storm();
    const error = await alone.client.turn(request()).catch((caught: unknown) => caught);
    expect(String(error)).toContain('after 2 attempts: 529 overloaded_error');
    expect(alone.retries.some((notice) => notice.handBack)).toBe(false);
  });

  it('does not retry a request the API rejects, and names the unmet expectation', async () => {
    const { client, session, retries } = harness({
      turns: [
        { content: [{ type: 'tool_use', name: 'run_tests', input: {} }] },
        { expect: { toolResultContains: '2 failed' }, content: [{ type: 'text', text: ANSWER }] },
      ],
    });
    const first = await client.turn(request());
    const toolUse = first.message.content[0];
    if (toolUse?.type !== 'tool_use') throw new Error('expected tool_use');
    const error = await client
      .turn(
        request([
          { role: 'user', content: 'Fix add().' },
          { role: 'assistant', content: first.message.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: 'all 9 passed' }] },
        ]),
      )
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DockhandError);
    expect(String(error)).toContain('400 invalid_request_error');
    expect(String(error)).toContain('toolResultContains "2 failed" not met');
    expect(retries).toEqual([]);
    expect(replay.server.requests(session)).toHaveLength(2);
  });

  it('sends toolChoice as tool_choice, and nothing when it is absent', async () => {
    const { client, session } = harness({
      turns: [
        { content: [{ type: 'tool_use', name: 'run_tests', input: {} }] },
        { content: [{ type: 'tool_use', name: 'run_tests', input: { scope: 'src' } }] },
      ],
    });
    const forced = await client.turn({ ...request(), toolChoice: { type: 'tool', name: 'run_tests', disable_parallel_tool_use: true } });
    expect(forced.message.content).toMatchObject([{ type: 'tool_use', name: 'run_tests' }]);
    const toolUse = forced.message.content[0];
    if (toolUse?.type !== 'tool_use') throw new Error('expected tool_use');
    await client.turn(
      request([
        { role: 'user', content: 'Fix add().' },
        { role: 'assistant', content: forced.message.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: 'ok' }] },
      ]),
    );
    const [first, second] = replay.server.requests(session);
    expect(first?.body.tool_choice).toEqual({ type: 'tool', name: 'run_tests', disable_parallel_tool_use: true });
    expect(second?.body).not.toHaveProperty('tool_choice');
  });

  it('does not retry a tool_choice the API rejects, and says which field was wrong', async () => {
    const { client, retries } = harness({ turns: [{ content: [{ type: 'tool_use', name: 'run_tests', input: {} }] }] });
    const error = await client.turn({ ...request(), toolChoice: { type: 'tool', name: 'submit_review' } }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DockhandError);
    // A 400 is the API answering the request as invalid: refused, not "could not be reached".
    expect(error instanceof DockhandError ? error.code : undefined).toBe('model_refused');
    expect(String(error)).toContain('the model refused the request');
    expect(String(error)).toContain('tool_choice.name: tool "submit_review" is not among the request\'s tools: "run_tests"');
    expect(retries).toEqual([]);
  });

  it('abandons a stalled stream after the idle timeout and retries it', async () => {
    const { client, retries } = harness({ deltaDelayMs: 400, turns: [{ content: [{ type: 'text', text: 'slow' }] }] }, {
      idleTimeoutMs: 150,
      retry: { maxAttempts: 2 },
    });
    const error = await client.turn(request()).catch((caught: unknown) => caught);
    expect(String(error)).toContain('stream stalled');
    expect(retries[0]?.reason).toMatch(/^stream stalled: no stream event for 150 ms/);
  });

  it('stops at once when the caller aborts', async () => {
    const { client, retries } = harness({ deltaDelayMs: 200, turns: [{ content: [{ type: 'text', text: 'slow answer' }] }] });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('task cancelled')), 100);
    const error = await client.turn({ ...request(), signal: controller.signal }).catch((caught: unknown) => caught);
    expect(String(error)).toContain('task cancelled');
    expect(retries).toEqual([]);
  });
});
