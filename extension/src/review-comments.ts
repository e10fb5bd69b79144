import type { ReviewComment } from '@dockhand/protocol';
import * as vscode from 'vscode';
import { AGENT_SCHEME, parseChangeUri } from './changes';

/*
 * Review comments on lines of the agent's version of a file (Comments API). Comments collect per
 * task until the developer sends them with "Request changes"; then they are cleared.
 */

class DraftComment implements vscode.Comment {
  readonly mode = vscode.CommentMode.Preview;
  readonly author = { name: 'You' };
  constructor(readonly body: string) {}
}

export class ReviewComments implements vscode.Disposable {
  readonly controller: vscode.CommentController;
  private readonly threads = new Set<vscode.CommentThread>();
  private readonly changed = new vscode.EventEmitter<string>();
  /** Fires with the task id whenever that task's pending comments change. */
  readonly onDidChange = this.changed.event;

  constructor() {
    this.controller = vscode.comments.createCommentController('dockhand.review', 'Dockhand review');
    this.controller.options = { prompt: 'Comment for the agent', placeHolder: 'What should change here?' };
    this.controller.commentingRangeProvider = {
      provideCommentingRanges: (document) =>
        document.uri.scheme === AGENT_SCHEME ? [new vscode.Range(0, 0, Math.max(0, document.lineCount - 1), 0)] : [],
    };
  }

  /** The "Add comment" button of a new or existing thread. */
  addComment(reply: vscode.CommentReply): void {
    const body = reply.text.trim();
    if (!body) return;
    const thread = reply.thread;
    thread.comments = [...thread.comments, new DraftComment(body)];
    thread.canReply = true;
    thread.label = 'Pending: sent with "Dockhand: Request changes"';
    this.threads.add(thread);
    const taskId = parseChangeUri(thread.uri)?.taskId;
    if (taskId) this.changed.fire(taskId);
  }

  /** Comments waiting to be sent for a task, as the review API wants them. */
  pending(taskId: string): ReviewComment[] {
    const comments: ReviewComment[] = [];
    for (const thread of this.threads) {
      const target = parseChangeUri(thread.uri);
      if (target?.taskId !== taskId) continue;
      const line = (thread.range?.start.line ?? 0) + 1;
      for (const comment of thread.comments) {
        const body = typeof comment.body === 'string' ? comment.body : comment.body.value;
        comments.push({ path: target.path, line, body });
      }
    }
    return comments;
  }

  clear(taskId: string): void {
    for (const thread of [...this.threads]) {
      if (parseChangeUri(thread.uri)?.taskId !== taskId) continue;
      thread.dispose();
      this.threads.delete(thread);
    }
    this.changed.fire(taskId);
  }

  dispose(): void {
    for (const thread of this.threads) thread.dispose();
    this.threads.clear();
    this.changed.dispose();
    this.controller.dispose();
  }
}
