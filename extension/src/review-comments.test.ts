import { describe, expect, it, vi } from 'vitest';

vi.mock('vscode', () => import('./test/vscode-stub'));

import type * as vscode from 'vscode';
import { AGENT_SCHEME, BASE_SCHEME, changeUri, parseChangeUri } from './changes';
import { ReviewComments } from './review-comments';
import { comments, type StubThread } from './test/vscode-stub';

const reply = (thread: StubThread, text: string) => ({ thread, text }) as unknown as vscode.CommentReply;

describe('review comments', () => {
  it('collects comments on lines of the agent version per task, as the review API wants them', () => {
    const review = new ReviewComments();
    const onCalc = comments.thread(changeUri(AGENT_SCHEME, 'task 1', 'src/calc.js') as never, 14);
    const onFormat = comments.thread(changeUri(AGENT_SCHEME, 'task 1', 'src/format.js') as never, 0);
    const otherTask = comments.thread(changeUri(AGENT_SCHEME, 'task-2', 'src/calc.js') as never, 3);
    review.addComment(reply(onCalc, 'Start at 0 but also guard against NaN'));
    review.addComment(reply(onCalc, '  '));
    review.addComment(reply(onCalc, 'and add a test'));
    review.addComment(reply(onFormat, 'Unrelated change; revert it'));
    review.addComment(reply(otherTask, 'other task'));
    expect(review.pending('task 1')).toEqual([
      { path: 'src/calc.js', line: 15, body: 'Start at 0 but also guard against NaN' },
      { path: 'src/calc.js', line: 15, body: 'and add a test' },
      { path: 'src/format.js', line: 1, body: 'Unrelated change; revert it' },
    ]);
    review.clear('task 1');
    expect(review.pending('task 1')).toEqual([]);
    expect(onCalc.disposed).toBe(true);
    expect(review.pending('task-2')).toHaveLength(1);
    review.dispose();
    expect(comments.controllers.at(-1)!.disposed).toBe(true);
  });

  it('offers commenting only on the agent version', () => {
    new ReviewComments();
    const provider = comments.controllers.at(-1)!.commentingRangeProvider as vscode.CommentingRangeProvider;
    const doc = (scheme: string) => ({ uri: { scheme }, lineCount: 22 }) as unknown as vscode.TextDocument;
    const token = {} as vscode.CancellationToken;
    expect(provider.provideCommentingRanges(doc(AGENT_SCHEME), token)).toHaveLength(1);
    expect(provider.provideCommentingRanges(doc(BASE_SCHEME), token)).toEqual([]);
    expect(provider.provideCommentingRanges(doc('file'), token)).toEqual([]);
  });

  it('round-trips task ids and paths through change URIs', () => {
    const uri = changeUri(BASE_SCHEME, 'task/with slash', 'src/deep/a b.js');
    expect(parseChangeUri(uri)).toEqual({ taskId: 'task/with slash', path: 'src/deep/a b.js' });
  });
});
