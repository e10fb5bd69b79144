import { Command, Option } from 'commander';
import { z } from 'zod';
import { DockhandError, fromZodError } from '../errors';
import {
  CreateTokenRequest,
  CreateTokenResponse,
  DEFAULT_TOKEN_LIFETIME,
  TokenListResponse,
  createTokenFor,
  viewOf,
  type TokenView,
} from '../api/tokens';
import type { Store } from '../store/types';
import { TOKEN_SCOPES } from '../store/types';
import type { ApiClient } from './client';

/*
 * `dockhand token create|list|revoke`. With --server URL and an admin token (--token or
 * DOCKHAND_TOKEN) they call the admin API (`/v1/tokens`, the token needs the admin
 * scope); without one they work on the data dir's store directly — how the first admin token is
 * made on the server machine.
 */

interface Deps {
  client(options: { server?: string; token?: string }): ApiClient;
  withStore<T>(fn: (store: Store) => Promise<T>): Promise<T>;
  out(line: string): void;
  clientOptions(command: Command): Command;
}

interface Remote {
  server?: string;
  token?: string;
}

/**
 * Over the API only when `--server` is given on the command line (DOCKHAND_URL alone does not
 * switch it: bootstrap scripts that make the first token on a fresh data dir inherit the caller's
 * environment); the admin token from --token or DOCKHAND_TOKEN. Else the data dir.
 */
function overApi(options: Remote): boolean {
  if (!options.server) return false;
  if (!(options.token ?? process.env.DOCKHAND_TOKEN)) {
    throw new DockhandError('unauthenticated', '--token: managing tokens over the API needs an admin token', {
      field: '--token',
      hint: 'pass --token <admin token> (or set DOCKHAND_TOKEN); without --server the command works on this machine\'s DOCKHAND_DATA_DIR',
    });
  }
  return true;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

function describeToken(info: TokenView): string {
  const state = info.revokedAt ? 'revoked' : info.expired ? `expired ${info.expiresAt}` : info.expiresAt ? `expires ${info.expiresAt}` : 'no expiry';
  return `${info.id}  ${info.user.padEnd(16)} ${info.scopes.join(',').padEnd(24)} ${state.padEnd(30)} ${info.label}`.trimEnd();
}

export function addTokenCommands(program: Command, deps: Deps): void {
  const { out } = deps;
  const token = program.command('token').description('API tokens: over the API with --server URL and an admin --token (or DOCKHAND_TOKEN); without --server, on this machine\'s DOCKHAND_DATA_DIR');

  deps.clientOptions(token.command('create [user]'))
    .description('print a new token for a user (created if missing); the user as an argument or --user; shown once')
    .option('--user <name>', 'user name (created if missing)')
    .addOption(new Option('--role <role>', 'role of a new user (default user); on the data dir it also changes an existing user\'s role').choices(['user', 'admin']))
    .option('--label <label>', 'what the token is for', '')
    .option('--scope <scope>', `a scope (repeat for more: ${TOKEN_SCOPES.join(', ')}; default: all of the user's role)`, collect)
    .option('--expires-in <lifetime>', `lifetime: <n>d, <n>h, <n>m or never`, DEFAULT_TOKEN_LIFETIME)
    .action(async (positional: string | undefined, options: Remote & { user?: string; role?: 'user' | 'admin'; label: string; scope?: string[]; expiresIn: string }) => {
      const user = options.user ?? positional;
      if (!user) throw new DockhandError('bad_request', '--user: name the user (dockhand token create alice, or --user alice)', { field: '--user' });
      if (options.user && positional && options.user !== positional) throw new DockhandError('bad_request', `--user: ${options.user} and the argument ${positional} disagree; give one`, { field: '--user' });
      const parsed = CreateTokenRequest.safeParse({
        user,
        label: options.label,
        expiresIn: options.expiresIn,
        ...(options.role ? { role: options.role } : {}),
        ...(options.scope ? { scopes: options.scope } : {}),
      });
      if (!parsed.success) throw cliError(fromZodError(parsed.error));
      const created = overApi(options)
        ? await deps.client(options).request('POST', '/v1/tokens', CreateTokenResponse, parsed.data).catch(rethrowForCli)
        : await deps.withStore(async (store) => {
          const existing = await store.getUser(user);
          // The machine's owner may change a role here (how the first admin is made); the API may not.
          if (existing && options.role && existing.role !== options.role) await store.createUser(user, options.role);
          const { role: _role, ...rest } = parsed.data;
          return createTokenFor(store, existing ? rest : parsed.data);
        }).catch(rethrowForCli);
      const { info } = created;
      out(`token ${info.id} for ${info.user} (shown once; scopes ${info.scopes.join(', ')}; ${info.expiresAt ? `expires ${info.expiresAt}` : 'no expiry'}):`);
      out(created.token);
    });

  deps.clientOptions(token.command('list'))
    .description('tokens and their scopes and expiry (never their secrets)')
    .option('--user <name>', 'only this user\'s')
    .option('--json', 'print JSON')
    .action(async (options: Remote & { user?: string; json?: boolean }) => {
      const tokens = overApi(options)
        ? (await deps.client(options).request('GET', `/v1/tokens${options.user ? `?user=${encodeURIComponent(options.user)}` : ''}`, TokenListResponse)).tokens
        : await deps.withStore(async (store) => Promise.all((await store.listTokens(options.user)).map((info) => viewOf(store, info))));
      if (options.json) return out(JSON.stringify(tokens, null, 2));
      for (const info of tokens) out(describeToken(info));
    });

  deps.clientOptions(token.command('revoke <id>'))
    .description('revoke a token: it is refused from now on')
    .action(async (id: string, options: Remote) => {
      if (overApi(options)) await deps.client(options).request('DELETE', `/v1/tokens/${encodeURIComponent(id)}`, z.object({ revoked: z.literal(true) }));
      else await deps.withStore(async (store) => {
        if (!(await store.revokeToken(id))) throw new DockhandError('not_found', `token ${id} not found or already revoked`, { hint: 'dockhand token list shows the tokens' });
      });
      out(`token ${id} revoked`);
    });
}

/** A request field named as the CLI option that sets it. */
const OPTION_OF_TOKEN_FIELD: Record<string, string> = { expiresIn: '--expires-in', scopes: '--scope', role: '--role', label: '--label', user: '--user' };

function rethrowForCli(error: unknown): never {
  throw error instanceof DockhandError ? cliError(error) : error;
}

function cliError(error: DockhandError): DockhandError {
  const field = error.field?.replace(/\[\d+\]$/, '');
  const option = field ? OPTION_OF_TOKEN_FIELD[field] : undefined;
  if (!option) return error;
  const message = error.message.replace(/^[\w.[\]]+: /, '');
  return new DockhandError(error.code, `${option}: ${message}`, { field: option, ...(error.hint ? { hint: error.hint } : {}) });
}
