import * as vscode from 'vscode';
import type { ApiClient } from './api-client';
import type { TokenStore } from './auth';
import type { Connection } from './connection';
import { DockhandError, describeError, tokenExpiredText } from './errors';

/*
 * "Dockhand: Sign in": the token is checked against the server (`GET /v1/me`) before it is stored
 * or anything says "signed in". A refused token keeps the box open with what to do; a server that
 * does not answer closes it with the buttons that fix that (set the URL, try again).
 */

export interface SignInDeps {
  api(): ApiClient;
  tokens: TokenStore;
  connection: Connection;
  log: vscode.LogOutputChannel;
}

export function signIn(deps: SignInDeps): Promise<boolean> {
  const url = deps.api().baseUrl;
  const box = vscode.window.createInputBox();
  box.title = 'Dockhand: Sign in';
  box.prompt = `API token for ${url}, from "dockhand token create --user <you>" on the server (kept in the OS keychain)`;
  box.placeholder = 'dh_…';
  box.password = true;
  box.ignoreFocusOut = true;
  return new Promise<boolean>((resolve) => {
    let settled = false;
    const finish = (ok: boolean): void => {
      if (settled) return;
      settled = true;
      resolve(ok);
      box.dispose();
    };
    box.onDidChangeValue(() => {
      box.validationMessage = undefined;
    });
    box.onDidAccept(async () => {
      const token = box.value.trim();
      if (!token) {
        box.validationMessage = 'Paste a token.';
        return;
      }
      box.busy = true;
      box.enabled = false;
      try {
        const me = await deps.api().me(token);
        await deps.tokens.set(token);
        deps.connection.signedIn(me.name);
        deps.log.info(`Signed in to ${url} as ${me.name}`);
        box.hide();
        finish(true);
        void vscode.window.showInformationMessage(`Dockhand: signed in to ${url} as ${me.name}.`);
      } catch (error) {
        box.busy = false;
        box.enabled = true;
        if (error instanceof DockhandError && error.code === 'token_expired') {
          deps.log.warn(`Sign-in refused by ${url}: ${error.message}`);
          box.validationMessage = tokenExpiredText(error.message);
          return;
        }
        if (error instanceof DockhandError && error.code === 'unauthenticated') {
          deps.log.warn(`Sign-in refused by ${url}: ${describeError(error)}`);
          box.validationMessage = `The server at ${url} does not know this token (unknown or revoked). Create one with "dockhand token create --user <you>" and paste it here.`;
          return;
        }
        deps.log.error(`Sign-in to ${url} failed: ${describeError(error)}`);
        box.hide();
        finish(false);
        const choice = await vscode.window.showErrorMessage(`Dockhand: cannot sign in: ${describeError(error)}`, 'Set server URL', 'Try again');
        if (choice === 'Set server URL') void vscode.commands.executeCommand('dockhand.setServerUrl');
        if (choice === 'Try again') void vscode.commands.executeCommand('dockhand.signIn');
      }
    });
    box.onDidHide(() => finish(false));
    box.show();
  });
}
