import { describe, expect, it } from 'vitest';
import { DockhandError } from '../errors';
import { AnthropicModelClient } from '../model/anthropic-client';
import type { CassetteInput } from '../model/replay/cassette';
import { useReplayServer } from '../model/replay/testing';
import { buildReviewRequest, reviewVerdictOf, type ReviewVerdict } from './review';

/* The review call through AnthropicModelClient and the real SDK against the replay server. */

const replay = useReplayServer('review');

const REVIEW_INPUT = {
  ticket: { kind: 'text' as const, title: 'average() is wrong', body: 'average([1, 2, 3]) should be 2.' },
  diff: 'diff --git a/src/calc.js b/src/calc.js\n-  for (let index = 1;\n+  for (let index = 0;\n',
  summary: 'Start the loop at 0.',
  tests: '5 passed, 0 failed',
};

async function review(turn: CassetteInput['turns'][number]): Promise<{ verdict: ReviewVerdict; session: string }> {
  const session = replay.session({ turns: [turn] });
  const client = new AnthropicModelClient({ apiKey: `replay:${session}`, baseURL: replay.server.url, model: 'claude-sonnet-4-6', retry: { maxAttempts: 1 } });
  const result = await client.turn({ ...buildReviewRequest(REVIEW_INPUT), maxTokens: 1024 });
  return { verdict: reviewVerdictOf(result.message), session };
}

describe('the review call', () => {
  it('forces one submit_review call and reads the verdict from it', async () => {
    const { verdict, session } = await review({
      expect: { toolChoice: { type: 'tool', name: 'submit_review' } },
      content: [{ type: 'tool_use', name: 'submit_review', input: { approved: false, problems: ['src/calc.js: no test for []'] } }],
    });
    expect(verdict).toEqual({ approved: false, problems: ['src/calc.js: no test for []'], summary: '' });
    expect(replay.server.requests(session)[0]?.body.tool_choice).toEqual({ type: 'tool', name: 'submit_review', disable_parallel_tool_use: true });
  });

  it('cannot be answered in prose: the forced choice makes a prose turn a rejected request', async () => {
    const error = await review({ content: [{ type: 'text', text: 'Looks fine to me.' }] }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DockhandError);
    expect(String(error)).toContain('tool_choice {type: tool, name: submit_review} not met');
  });

  it('turns an input that does not fit the schema into a review that does not approve, saying what was wrong', async () => {
    const { verdict } = await review({ content: [{ type: 'tool_use', name: 'submit_review', input: { approved: 'yes', problems: [] } }] });
    expect(verdict.approved).toBe(false);
    expect(verdict.problems).toEqual([
      'The reviewer returned no usable verdict (submit_review input approved: Invalid input: expected boolean, received string), ' +
        'so the change is not verified; call finish again for a new review.',
    ]);
  });

  it('says when the verdict was cut off at max_tokens', async () => {
    const { verdict } = await review({ stop_reason: 'max_tokens', content: [{ type: 'tool_use', name: 'submit_review', input: {} }] });
    expect(verdict.approved).toBe(false);
    expect(verdict.problems[0]).toContain('submit_review input approved: Invalid input: expected boolean, received undefined, the reply was cut off at max_tokens');
  });

  it('says when the reviewer refused instead of calling submit_review', async () => {
    const { verdict } = await review({ stop_reason: 'refusal', content: [{ type: 'text', text: 'I cannot review this.' }] });
    expect(verdict.approved).toBe(false);
    expect(verdict.problems[0]).toContain('(no submit_review call; the reply stopped with refusal)');
  });
});
