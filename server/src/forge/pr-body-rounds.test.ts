import { describe, expect, it } from 'vitest';
import { changeRounds, TaskEvent } from '@dockhand/protocol';
import { buildPullRequestBody } from './pr-body';

let seq = 0;
function event(type: TaskEvent['type'], data: unknown): TaskEvent {
  seq += 1;
  return TaskEvent.parse({ seq, ts: new Date(0).toISOString(), taskId: 't_1', type, data });
}

function finish(id: string, summary: string, refused = false): TaskEvent[] {
  return [
    event('tool.called', { turn: 1, toolUseId: id, name: 'finish', input: { summary } }),
    event('tool.finished', { toolUseId: id, name: 'finish', isError: refused, output: '', truncated: false, durationMs: 1 }),
  ];
}

const log: TaskEvent[] = [
  ...finish('f0', 'Too early: tests fail.', true),
  ...finish('f1', 'Cause: the slice ended at `start + size - 1`. Fix: it ends at `start + size`.'),
  event('review.requested_changes', { by: 'ada', comments: [{ path: 'src/paginate.js', line: 3, body: 'Name the end.' }, { body: 'Mention @olive\nin a comment.' }], rejectedFiles: ['CHANGELOG.md'] }),
  ...finish('f2', 'Added the comment the reviewer asked for.'),
];

describe('changeRounds', () => {
  it('keeps each round: its accepted finish and the request that started it; a refused finish is not an account', () => {
    expect(changeRounds(log)).toEqual([
      { round: 1, summary: 'Cause: the slice ended at `start + size - 1`. Fix: it ends at `start + size`.' },
      { round: 2, requested: { by: 'ada', comments: ['src/paginate.js:3 Name the end.', 'Mention @olive\nin a comment.'], revert: ['CHANGELOG.md'] }, summary: 'Added the comment the reviewer asked for.' },
    ]);
  });

  it("takes the result's summary for a last round whose finish is not in the log", () => {
    expect(changeRounds([], 'Fixed it.')).toEqual([{ round: 1, summary: 'Fixed it.' }]);
  });
});

describe('the PR body after review rounds', () => {
  const report = { ticket: { title: 'paginate drops the last item' }, usage: { turns: 3, inputTokens: 1, outputTokens: 1, costUsd: 0.1 } };

  it("tells every round, not only the last round's summary (issue 24 item 2)", () => {
    const body = buildPullRequestBody({ ...report, summary: 'Added the comment the reviewer asked for.', rounds: changeRounds(log, 'Added the comment the reviewer asked for.') });
    expect(body).toContain('## Summary, round by round (written by the agent)');
    expect(body).toContain('**Round 1**\n\n> Cause: the slice ended at `start + size - 1`. Fix: it ends at `start + size`.');
    expect(body).toContain('**Round 2**\n\nada asked: src/paginate.js:3 Name the end. · Mention @&#8203;olive in a comment. (and to revert `CHANGELOG.md`)\n\n> Added the comment the reviewer asked for.');
    // Still last, after the server's sections.
    expect(body.indexOf('## Cost')).toBeLessThan(body.indexOf('## Summary, round by round'));
    expect(body).not.toContain('## Summary (written by the agent)');
  });

  it('keeps the one summary section when there was one round', () => {
    const body = buildPullRequestBody({ ...report, summary: 'Fixed it.', rounds: changeRounds(finish('f', 'Fixed it.'), 'Fixed it.') });
    expect(body).toContain('## Summary (written by the agent)\n\n> Fixed it.');
  });
});
