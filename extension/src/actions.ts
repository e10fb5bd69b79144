import type { ReviewComment } from '@dockhand/protocol';
import * as vscode from 'vscode';
import type { ApiClient } from './api-client';
import { describeError } from './errors';

/*
 * The developer's decisions, sent to the server. Shared by the commands, the side panel and the
 * review comments so each decision has one code path and one way of reporting failure.
 */

export class TaskActions {
  constructor(
    private readonly api: () => ApiClient,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  interrupt(taskId: string): Promise<boolean> {
    return this.run('Interrupt', () => this.api().interrupt(taskId), 'Asked the agent to stop.');
  }

  pause(taskId: string): Promise<boolean> {
    return this.run('Pause', async () => void (await this.api().pause(taskId)));
  }

  /** Resume; a message written for the paused agent goes first, so it is what the agent reads first. */
  resume(taskId: string, text?: string): Promise<boolean> {
    return this.run('Resume', async () => {
      if (text) await this.api().sendMessage(taskId, text);
      await this.api().resume(taskId);
    });
  }

  sendMessage(taskId: string, text: string): Promise<boolean> {
    return this.run('Send message', () => this.api().sendMessage(taskId, text));
  }

  decideApproval(taskId: string, approvalId: string, decision: 'approved' | 'denied', comment?: string): Promise<boolean> {
    return this.run(`Approval ${decision}`, () => this.api().decideApproval(taskId, approvalId, decision, comment));
  }

  review(taskId: string, action: 'approve' | 'request_changes' | 'reject', comments: ReviewComment[] = [], rejectedFiles: string[] = []): Promise<boolean> {
    const files = (n: number) => `${n} file${n === 1 ? '' : 's'}`;
    const done =
      action === 'approve'
        ? rejectedFiles.length
          ? `Approved without ${files(rejectedFiles.length)} (${rejectedFiles.join(', ')}): the server will push the rest and open a pull request.`
          : 'Approved: the server will push the branch and open a pull request.'
        : action === 'request_changes'
          ? `Sent ${comments.length} review comment${comments.length === 1 ? '' : 's'}${rejectedFiles.length ? ` and ${files(rejectedFiles.length)} to revert` : ''}; the agent resumes.`
          : 'Rejected the change.';
    return this.run(`Review (${action})`, () => this.api().review(taskId, action, comments, action === 'reject' ? [] : rejectedFiles), done);
  }

  /** Runs one request; failures are logged and shown, never thrown at a button handler. */
  private async run(what: string, request: () => Promise<void>, success?: string): Promise<boolean> {
    try {
      await request();
      this.log.info(`${what}: done`);
      if (success) void vscode.window.showInformationMessage(success);
      return true;
    } catch (error) {
      const message = `${what} failed: ${describeError(error)}`;
      this.log.error(message);
      void vscode.window.showErrorMessage(`Dockhand: ${message}`);
      return false;
    }
  }
}
