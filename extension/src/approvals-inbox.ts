import type { InboxApproval } from '@dockhand/protocol';
import { relativeTime } from '@dockhand/webview-ui/task-identity';
import * as vscode from 'vscode';
import type { ApiClient } from './api-client';
import type { DockhandState } from './dockhand-state';

/*
 * "Dockhand: Show approvals waiting for me": the server's inbox (`GET /v1/approvals`) in a
 * QuickPick — your tasks' command and push approvals and the policy overrides of repos you own —
 * and the chosen task opened in the side panel. Deciding happens there, as for any task.
 */

export interface ApprovalInboxDeps {
  api(): ApiClient;
  state: DockhandState;
  revealPanel(): void;
}

const KIND_LABEL: Record<InboxApproval['kind'], string> = {
  policy_override: 'Policy override',
  push: 'Push',
  command: 'Command',
};

interface InboxItem extends vscode.QuickPickItem {
  approval: InboxApproval;
}

/** "12 min ago (14:02 UTC)": how long it has waited, and when, never a raw ISO timestamp. */
export function requestedWhen(iso: string, now: number): string {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return iso;
  const clock = at.toISOString().slice(11, 16);
  const day = now - at.getTime() < 20 * 3_600_000 ? '' : `${at.toISOString().slice(0, 10)} `;
  return `${relativeTime(iso, now)} (${day}${clock} UTC)`;
}

function item(approval: InboxApproval, now: number): InboxItem {
  const what = approval.kind === 'command' && approval.command ? `${KIND_LABEL.command}: ${approval.command}` : KIND_LABEL[approval.kind];
  return {
    label: approval.taskTitle,
    description: `${what} · ${approval.taskOwner} · ${approval.repo}`,
    detail: `${approval.reason} · requested ${requestedWhen(approval.requestedAt, now)}`,
    approval,
  };
}

/** Returns the task opened, or undefined when there was nothing to pick or the pick was cancelled. */
export async function showApprovalInbox(deps: ApprovalInboxDeps): Promise<string | undefined> {
  const { approvals, more } = await deps.api().listApprovalInbox();
  if (approvals.length === 0) {
    void vscode.window.showInformationMessage('Dockhand: nothing waits for your decision.');
    return undefined;
  }
  const now = Date.now();
  const picked = await vscode.window.showQuickPick(approvals.map((approval) => item(approval, now)), {
    title: `Dockhand: approvals waiting for you (${approvals.length}${more ? '+' : ''})`,
    placeHolder: 'Pick one to open its task in the side panel',
    matchOnDescription: true,
    matchOnDetail: true,
  });
  if (!picked) return undefined;
  const taskId = picked.approval.taskId;
  // A repo owner's inbox holds other people's tasks, which are not in this window's task list.
  if (!deps.state.task(taskId)) deps.state.addTask(await deps.api().getTask(taskId), { keep: true });
  deps.state.select(taskId);
  deps.revealPanel();
  return taskId;
}
