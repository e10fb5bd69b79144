import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { harness, type Harness } from '../api/test-support';
import { ApiClient } from './client';
import { addSecretCommands } from './secret-commands';

/* `dockhand secret` against a real API on loopback (SQLite store, the app's own routes). */

let h: Harness;
let url: string;
let scratch: string;
beforeEach(async () => {
  h = await harness();
  url = await h.app.listen({ host: '127.0.0.1', port: 0 });
  scratch = mkdtempSync(join(tmpdir(), 'dockhand-secret-cli-'));
});
afterEach(async () => {
  await h.close();
  rmSync(scratch, { recursive: true, force: true });
});

async function run(args: string[], stdin = ''): Promise<string[]> {
  const lines: string[] = [];
  const program = new Command().exitOverride();
  addSecretCommands(program, {
    client: (options) => new ApiClient(options.server ?? url, options.token ?? h.tokens.admin),
    out: (line) => lines.push(line),
    clientOptions: (command) => command.option('--server <url>').option('--token <token>'),
    readStdin: async () => stdin,
  });
  await program.parseAsync(['node', 'dockhand', ...args]);
  return lines;
}

describe('dockhand secret', () => {
  it('sets from stdin and from a file (one final newline dropped), lists without values, removes', async () => {
    const token = 'npm_cli_token_81f3';
    expect(await run(['secret', 'set', 'app', 'NPM_ACME'], `${token}\n`)).toEqual([expect.stringMatching(/^set NPM_ACME for app \(by root at .+\)$/)]);
    const file = join(scratch, 'sentry.txt');
    writeFileSync(file, 'sentry-value\n');
    await run(['secret', 'set', 'app', 'SENTRY_AUTH', '--from-file', file]);
    const listed = await run(['secret', 'list', 'app']);
    expect(listed[0]).toMatch(/^NAME\s+SET BY\s+SET AT\s+LAST USED$/);
    expect(listed.slice(1).map((line) => line.split(/\s+/)[0])).toEqual(['NPM_ACME', 'SENTRY_AUTH']);
    expect(listed.join('\n')).not.toContain(token);
    expect(listed[1]).toMatch(/never$/);
    expect(await run(['secret', 'rm', 'app', 'NPM_ACME'])).toEqual(['removed NPM_ACME from app']);
    expect((await run(['secret', 'list', 'app', '--json'])).join('')).not.toContain('NPM_ACME');
  });

  it('an empty value, a missing file and a user who is not an owner are refused with what to do', async () => {
    await expect(run(['secret', 'set', 'app', 'NPM_ACME'], '\n')).rejects.toThrow(/stdin holds no value for NPM_ACME/);
    await expect(run(['secret', 'set', 'app', 'NPM_ACME', '--from-file', join(scratch, 'absent')])).rejects.toThrow(/--from-file: cannot read/);
    await expect(run(['secret', 'list', 'app', '--token', h.tokens.alice])).rejects.toThrow(/the secrets of app are for admins and its owners/);
  });
});
