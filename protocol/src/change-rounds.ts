import type { TaskEvent } from './events';

/**
 * The story of a change across review rounds, read from the task's log: per round, what the
 * reviewer asked before it (none for the first) and what the agent said it did (the summary of the
 * round's accepted `finish`; a refused finish is not the round's account). The server's PR body
 * (server/src/forge/pr-body.ts) and the extension's PR view (extension/src/pull-request-view.ts)
 * both tell it: the publisher's summary is only the last round's, so a PR after a second round
 * would otherwise keep "Added the comment the reviewer asked for." and lose the cause and the fix
 * (issue 24).
 */

export interface ChangeRound {
  round: number;
  /** What the reviewer asked before this round (none for the first). */
  requested?: { by: string; comments: string[]; revert: string[] };
  /** What the agent said it did in this round (its accepted `finish`). */
  summary: string;
}

/** `lastSummary`: the result's summary, taken for a last round whose finish is not in the log. */
export function changeRounds(events: readonly TaskEvent[], lastSummary = ''): ChangeRound[] {
  const rounds: ChangeRound[] = [];
  const finishes = new Map<string, string>();
  let current: ChangeRound = { round: 1, summary: '' };
  for (const event of events) {
    if (event.type === 'tool.called' && event.data.name === 'finish') {
      const summary: unknown = event.data.input && typeof event.data.input === 'object' ? Reflect.get(event.data.input, 'summary') : undefined;
      if (typeof summary === 'string') finishes.set(event.data.toolUseId, summary.trim());
    } else if (event.type === 'tool.finished' && event.data.name === 'finish' && !event.data.isError) {
      current.summary = finishes.get(event.data.toolUseId) ?? current.summary;
    } else if (event.type === 'review.requested_changes') {
      rounds.push(current);
      const comments = event.data.comments.map((comment) => (comment.path ? `${comment.path}${comment.line ? `:${comment.line}` : ''} ${comment.body}` : comment.body));
      current = { round: current.round + 1, requested: { by: event.data.by, comments, revert: event.data.rejectedFiles ?? [] }, summary: '' };
    }
  }
  if (!current.summary) current.summary = lastSummary.trim();
  rounds.push(current);
  return rounds.filter((round) => round.summary || round.requested);
}
