import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';

/*
 * Runs inside VS Code's extension host with the development copy of the extension: checks what
 * the manifest promises against what the running extension registered.
 */

suite('Dockhand extension host', () => {
  suiteSetup(async () => {
    const extension = vscode.extensions.getExtension('dockhand.dockhand');
    assert.ok(extension, 'the extension is installed');
    await extension.activate();
  });

  test('registers every command it declares', async () => {
    const extension = vscode.extensions.getExtension('dockhand.dockhand')!;
    const manifest: unknown = extension.packageJSON;
    const declared = (Reflect.get(Reflect.get(Object(manifest), 'contributes'), 'commands') as Array<{ command: string }>).map((c) => c.command);
    const registered = new Set(await vscode.commands.getCommands(true));
    const missing = declared.filter((command) => !registered.has(command));
    assert.deepEqual(missing, []);
    assert.ok(declared.includes('dockhand.sendTicket'));
  });

  test('reads its settings with the declared defaults', () => {
    const config = vscode.workspace.getConfiguration('dockhand');
    assert.equal(config.get('budgets.maxTurns'), 40);
    assert.equal(config.get('send.includeActiveFile'), 'ask');
    assert.match(String(config.get('serverUrl')), /^http:\/\//);
  });

  test('its diff documents say plainly that sign-in is needed when there is no token', async () => {
    await assert.rejects(
      Promise.resolve(vscode.workspace.openTextDocument(vscode.Uri.parse('dockhand-agent:/no-task/src/a.js'))),
      /Not signed in to the Dockhand server/,
    );
  });

  test('defaults to the server\'s own URL and opens its welcome view when no server answers', async () => {
    assert.equal(vscode.workspace.getConfiguration('dockhand').get('serverUrl'), 'http://127.0.0.1:8737');
    await vscode.commands.executeCommand('dockhand.welcome.focus');
  });
});
