import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { DockhandError } from '../errors';
import { SecretListResponse, SecretRemoved } from '../api/secrets';
import { SecretView } from '../secrets/types';
import type { ApiClient } from './client';

/*
 * `dockhand secret set|list|rm`: a registered repository's secrets through the server's API
 * (`/v1/repos/<repo>/secrets`), for admins and the repository's owners. The value is read from a
 * file or stdin, never from the command line (where `ps` and shell history would keep it), and
 * is never printed back.
 */

interface Deps {
  client(options: { server?: string; token?: string }): ApiClient;
  out(line: string): void;
  clientOptions(command: Command): Command;
  /** The whole of stdin (the value when no --from-file is given). */
  readStdin(): Promise<string>;
}

/** One final newline is what `echo` and editors add: not part of a token. */
function withoutFinalNewline(text: string): string {
  return text.replace(/\r?\n$/, '');
}

export function addSecretCommands(program: Command, deps: Deps): void {
  const { out } = deps;
  const secret = program.command('secret').description('a repository\'s secrets (admins and its owners): registry tokens the server uses for the repository\'s builds; never shown again');

  deps.clientOptions(secret.command('set <repo> <name>'))
    .description('set a secret from --from-file FILE or stdin (one final newline dropped); e.g. dockhand secret set web NPM_ACME --from-file token.txt')
    .option('--from-file <file>', 'read the value from this file')
    .action(async (repo: string, name: string, options: { fromFile?: string; server?: string; token?: string }) => {
      let value: string;
      if (options.fromFile) {
        try {
          value = await readFile(options.fromFile, 'utf8');
        } catch (error) {
          throw new DockhandError('bad_request', `--from-file: cannot read ${options.fromFile}: ${error instanceof Error ? error.message : String(error)}`, { field: '--from-file' });
        }
      } else value = await deps.readStdin();
      value = withoutFinalNewline(value);
      if (value === '') {
        throw new DockhandError('bad_request', `${options.fromFile ? `--from-file: ${options.fromFile}` : 'stdin'} holds no value for ${name}`, {
          field: options.fromFile ? '--from-file' : 'stdin',
          hint: `pipe it in (printf %s "$TOKEN" | dockhand secret set ${repo} ${name}) or pass --from-file FILE`,
        });
      }
      const view = await deps.client(options).request('PUT', `/v1/repos/${encodeURIComponent(repo)}/secrets/${encodeURIComponent(name)}`, SecretView, { value });
      out(`set ${view.name} for ${repo} (by ${view.setBy} at ${view.setAt})`);
    });

  deps.clientOptions(secret.command('list <repo>'))
    .description('names, who set each and when, and its last use (never values)')
    .option('--json', 'print JSON')
    .action(async (repo: string, options: { json?: boolean; server?: string; token?: string }) => {
      const listed = await deps.client(options).request('GET', `/v1/repos/${encodeURIComponent(repo)}/secrets`, SecretListResponse);
      if (options.json) return out(JSON.stringify(listed.secrets, null, 2));
      if (listed.secrets.length === 0) return out(`${repo} has no secrets (add one: dockhand secret set ${repo} NAME --from-file FILE)`);
      const rows = [['NAME', 'SET BY', 'SET AT', 'LAST USED'], ...listed.secrets.map((entry) => [entry.name, entry.setBy, entry.setAt, entry.lastUsedAt ? `${entry.lastUsedAt} (${entry.lastUsedBy ?? '?'})` : 'never'])];
      const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? [];
      for (const row of rows) out(row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0))).join('  '));
    });

  deps.clientOptions(secret.command('rm <repo> <name>'))
    .description('remove a secret (builds that need it fail naming it until it is set again)')
    .action(async (repo: string, name: string, options: { server?: string; token?: string }) => {
      await deps.client(options).request('DELETE', `/v1/repos/${encodeURIComponent(repo)}/secrets/${encodeURIComponent(name)}`, SecretRemoved);
      out(`removed ${name} from ${repo}`);
    });
}

/** stdin to its end (the CLI's default reader). */
export async function readAllStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('value (end with Ctrl-D): ');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}
