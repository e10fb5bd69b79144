import type { TaskEvent } from '@dockhand/protocol';

/**
 * The story of a change across review rounds, read from the task's log for its pull request: per
 * round, what the reviewer asked before it (none for the first) and what the agent said it did
 * (the summary of the round's accepted `finish`; a refused finish is not the round's account).
 * The publisher's summary is only the last round's, so a PR after a second round would otherwise
 * keep "Added the comment the reviewer asked for." and lose the cause and the fix (issue 24).
 * The extension's PR view reads the same events (extension/src/pull-request-view.ts).
 */

export interface ReviewRound {
  round: number;
  requested?: { by: string; comments: string[]; revert: string[] };
  summary: string;
}

export function reviewRounds(events: readonly TaskEvent[], lastSummary = ''): ReviewRound[] {
  const rounds: ReviewRound[] = [];
  const finishes = new Map<string, string>();
  let current: ReviewRound = { round: 1, summary: '' };
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
  // The result's summary is the last round's own when its finish is not in the log.
  if (!current.summary) current.summary = lastSummary.trim();
  rounds.push(current);
  return rounds.filter((round) => round.summary || round.requested);
}
