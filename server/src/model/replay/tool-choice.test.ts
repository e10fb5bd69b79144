import Anthropic, { BadRequestError } from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { parseCassette, type CassetteInput } from './cassette';
import { useReplayServer } from './testing';

/* tool_choice through the real SDK: validated like the API, and held against the cassette turn it plays. */

const MODEL = 'claude-sonnet-4-6';
const REVIEW_TOOL: Anthropic.Tool = { name: 'submit_review', input_schema: { type: 'object', properties: { approved: { type: 'boolean' } } } };
const EDIT_TOOL: Anthropic.Tool = { name: 'edit_file', input_schema: { type: 'object', properties: {} } };
const FORCE_REVIEW: Anthropic.ToolChoice = { type: 'tool', name: 'submit_review' };
const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Review this diff.' }];

const replay = useReplayServer('choice');

function session(cassette: CassetteInput): { client: Anthropic; name: string } {
  const name = replay.session(cassette);
  return { client: new Anthropic({ apiKey: `replay:${name}`, baseURL: replay.server.url, maxRetries: 0 }), name };
}

const approve: CassetteInput = { turns: [{ name: 'approve', content: [{ type: 'tool_use', name: 'submit_review', input: { approved: true } }] }] };

async function rejection(promise: Promise<unknown>): Promise<BadRequestError> {
  const error = await promise.catch((caught: unknown) => caught);
  if (!(error instanceof BadRequestError)) throw new Error(`expected a 400 BadRequestError, got ${String(error)}`);
  expect(error.type).toBe('invalid_request_error');
  return error;
}

describe('tool_choice in the replay server', () => {
  it('plays a forced turn that calls the forced tool, streaming and not', async () => {
    const { client, name } = session(approve);
    const request = { model: MODEL, max_tokens: 256, messages, tools: [REVIEW_TOOL], tool_choice: FORCE_REVIEW };
    const created = await client.messages.create(request);
    const streamed = await client.messages.stream(request).finalMessage();
    for (const message of [created, streamed]) {
      expect(message.content).toMatchObject([{ type: 'tool_use', name: 'submit_review', input: { approved: true } }]);
      expect(message.stop_reason).toBe('tool_use');
    }
    expect(replay.server.requests(name).map((record) => record.body.tool_choice)).toEqual([FORCE_REVIEW, FORCE_REVIEW]);
  });

  it('rejects a malformed tool_choice like the API does, naming the field', async () => {
    const { name } = session(approve);
    const post = (toolChoice: unknown): Promise<Response> =>
      fetch(`${replay.server.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': `replay:${name}` },
        body: JSON.stringify({ model: MODEL, max_tokens: 64, messages, tools: [REVIEW_TOOL], tool_choice: toolChoice }),
      });
    for (const [toolChoice, field] of [
      [{ type: 'required' }, 'tool_choice.type'],
      [{ type: 'tool' }, 'tool_choice.name'],
      ['any', 'tool_choice'],
      [{ type: 'auto', name: 'submit_review' }, 'tool_choice'],
    ] as const) {
      const response = await post(toolChoice);
      expect(response.status, JSON.stringify(toolChoice)).toBe(400);
      const body: unknown = await response.json();
      expect(body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringMatching(new RegExp(`^${field.replace('.', '\\.')}: `)) } });
    }
    expect(replay.server.requests(name)).toEqual([]);
  });

  it('rejects a choice the tools cannot satisfy, and forced tool use with thinking', async () => {
    const { client } = session(approve);
    const unknownTool = await rejection(
      client.messages.create({ model: MODEL, max_tokens: 64, messages, tools: [EDIT_TOOL], tool_choice: FORCE_REVIEW }),
    );
    expect(unknownTool.apiMessage).toBe('tool_choice.name: tool "submit_review" is not among the request\'s tools: "edit_file"');

    const anyWithoutTools = await rejection(client.messages.create({ model: MODEL, max_tokens: 64, messages, tool_choice: { type: 'any' } }));
    expect(anyWithoutTools.apiMessage).toMatch(/^tool_choice\.type: "any" forces a tool call, but the request has no tools/);

    const thinking = await rejection(
      client.messages.create({
        model: MODEL,
        max_tokens: 2048,
        messages,
        tools: [REVIEW_TOOL],
        tool_choice: FORCE_REVIEW,
        thinking: { type: 'enabled', budget_tokens: 1024 },
      }),
    );
    expect(thinking.apiMessage).toBe('Thinking may not be enabled when tool_choice forces tool use.');
  });

  it('fails loudly when the scripted turn could not have answered the forced choice', async () => {
    const cases: Array<{ turn: CassetteInput['turns'][number]; choice: Anthropic.ToolChoice; says: string }> = [
      {
        turn: { name: 'prose', content: [{ type: 'text', text: 'Looks good to me.' }] },
        choice: FORCE_REVIEW,
        says: 'replay %s, prose: tool_choice {type: tool, name: submit_review} not met: a forced tool call comes first, with no text before it (the API prefills it), but the turn opens with text (the turn plays: text)',
      },
      {
        turn: { name: 'preamble', content: [{ type: 'text', text: 'Reviewing.' }, { type: 'tool_use', name: 'submit_review', input: { approved: true } }] },
        choice: { type: 'any' },
        says: 'replay %s, preamble: tool_choice {type: any} not met: a forced tool call comes first',
      },
      {
        turn: { name: 'other tool', content: [{ type: 'tool_use', name: 'edit_file', input: {} }] },
        choice: FORCE_REVIEW,
        says: 'replay %s, other tool: tool_choice {type: tool, name: submit_review} not met: the request forces submit_review but the turn calls edit_file (the turn plays: tool_use edit_file)',
      },
      {
        turn: { name: 'tool under none', content: [{ type: 'tool_use', name: 'submit_review', input: {} }] },
        choice: { type: 'none' },
        says: 'replay %s, tool under none: tool_choice {type: none} not met: the request allows no tool call but the turn calls one',
      },
      {
        turn: {
          name: 'two verdicts',
          content: [
            { type: 'tool_use', name: 'submit_review', input: { approved: true } },
            { type: 'tool_use', name: 'submit_review', input: { approved: false } },
          ],
        },
        choice: { ...FORCE_REVIEW, disable_parallel_tool_use: true },
        says: 'replay %s, two verdicts: tool_choice {type: tool, name: submit_review} not met: disable_parallel_tool_use allows one tool call but the turn has 2',
      },
    ];
    for (const { turn, choice, says } of cases) {
      const { client, name } = session({ turns: [turn] });
      const error = await rejection(
        client.messages.stream({ model: MODEL, max_tokens: 64, messages, tools: [REVIEW_TOOL, EDIT_TOOL], tool_choice: choice }).finalMessage(),
      );
      expect(error.apiMessage).toContain(says.replace('%s', name));
      expect(replay.server.requests(name).map((record) => [record.status, record.error])).toEqual([[400, error.apiMessage]]);
    }
  });

  it('holds no turn that ends in a refusal to the choice', async () => {
    const { client } = session({ turns: [{ stop_reason: 'refusal', content: [{ type: 'text', text: 'I cannot help with that.' }] }] });
    const message = await client.messages.create({ model: MODEL, max_tokens: 64, messages, tools: [REVIEW_TOOL], tool_choice: FORCE_REVIEW });
    expect(message.stop_reason).toBe('refusal');
  });

  it('checks a toolChoice expectation, an absent tool_choice counting as auto', async () => {
    const expecting: CassetteInput = {
      turns: [{ expect: { toolChoice: { type: 'tool', name: 'submit_review' } }, content: [{ type: 'tool_use', name: 'submit_review', input: {} }] }],
    };
    const { client, name } = session(expecting);
    const played = await client.messages.create({ model: MODEL, max_tokens: 64, messages, tools: [REVIEW_TOOL], tool_choice: FORCE_REVIEW });
    expect(played.content[0]).toMatchObject({ type: 'tool_use', name: 'submit_review' });
    const unforced = await rejection(client.messages.create({ model: MODEL, max_tokens: 64, messages, tools: [REVIEW_TOOL] }));
    expect(unforced.apiMessage).toBe(
      `replay ${name}, turn 1: expectation toolChoice {type: tool, name: submit_review} not met: the request sent tool_choice absent (auto)`,
    );
  });

  it('refuses a toolChoice expectation with a name for a type that has none', () => {
    const bad = { turns: [{ expect: { toolChoice: { type: 'any', name: 'submit_review' } }, content: [{ type: 'text', text: 'x' }] }] };
    expect(() => parseCassette(bad, 'review.yaml')).toThrow(/review\.yaml: turns\[0\]\.expect\.toolChoice\.name: name is only for type tool/);
  });
});
