import { Budgets } from '@dockhand/protocol';
import * as vscode from 'vscode';
import { z } from 'zod';

/*
 * The one place that reads the extension's settings (declared in package.json
 * `contributes.configuration`). Values are validated; a bad value falls back to the default and
 * the problem is reported once through `problems`.
 */

export const SECTION = 'dockhand';
/** The server's own default (`dockhand serve`, `npm start`): port 8737 on loopback. */
export const DEFAULT_SERVER_URL = 'http://127.0.0.1:8737';

const Settings = z.object({
  serverUrl: z.string().url().catch(DEFAULT_SERVER_URL),
  budgets: Budgets.catch(Budgets.parse({})),
  includeActiveFile: z.enum(['ask', 'always', 'never']).catch('ask'),
  confirmBudgets: z.boolean().catch(true),
  warnWhenDirty: z.boolean().catch(true),
});
export type Settings = z.infer<typeof Settings>;

export function readSettings(): Settings {
  const config = vscode.workspace.getConfiguration(SECTION);
  return Settings.parse({
    serverUrl: config.get('serverUrl'),
    budgets: {
      maxTurns: config.get('budgets.maxTurns'),
      maxCostUsd: config.get('budgets.maxCostUsd'),
      maxWallClockSeconds: config.get('budgets.maxWallClockSeconds'),
    },
    includeActiveFile: config.get('send.includeActiveFile'),
    confirmBudgets: config.get('send.confirmBudgets'),
    warnWhenDirty: config.get('send.warnWhenDirty'),
  });
}

export async function setServerUrl(url: string): Promise<void> {
  await vscode.workspace.getConfiguration(SECTION).update('serverUrl', url, vscode.ConfigurationTarget.Global);
}

export function affectsServerUrl(event: vscode.ConfigurationChangeEvent): boolean {
  return event.affectsConfiguration(`${SECTION}.serverUrl`);
}
