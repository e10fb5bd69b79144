import * as vscode from 'vscode';
import { describeError, errorActions } from './errors';

/**
 * Shows an error once, in words, with the buttons that fix it ("Set server URL", "Sign in",
 * "Show details"); the chosen one runs its command. The full error goes to the output channel.
 */
export function showError(log: vscode.LogOutputChannel, what: string, error: unknown): void {
  const text = describeError(error);
  log.error(`${what}: ${text}`);
  if (error instanceof Error && error.stack) log.debug(error.stack);
  const actions = errorActions(error);
  void vscode.window.showErrorMessage(`Dockhand: ${what}: ${text}`, ...actions.map((action) => action.title)).then((choice) => {
    const action = actions.find((a) => a.title === choice);
    if (action) void vscode.commands.executeCommand(action.command);
  });
}
