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
 * `dockhand token create|list|revoke`. With a server (--server, or DOCKHAND_URL) and an admin
 * token (--token or DOCKHAND_TOKEN) they call the admin API (`/v1/tokens`, the token needs the
 * admin scope); with --local, or with no server named, they work on the data dir's store
 * directly — how the first admin token is made on the server machine. A client command never
 * makes a data directory as a side effect: list and revoke need an existing database, and create
 * makes a new one only when no server is named (the bootstrap) or --local says so.
 */

interface Deps {
  client(options: { server?: string; token?: string }): ApiClient;
  withStore<T>(fn: (store: Store) => Promise<T>): Promise<T>;
  /** The data dir's SQLite file and whether it exists; undefined when the store is Postgres. */
  localDatabase(): { path: string; exists: boolean } | undefined;
  out(line: string): void;
  clientOptions(command: Command): Command;
}

interface Remote {
  server?: string;
  token?: string;
  local?: boolean;
}

/**
 * Over the API when a server is named — `--server`, or DOCKHAND_URL as for every client command —
 * with an admin token from --token or DOCKHAND_TOKEN. `--local` (bootstrap scripts: `npm start`)
 * always works on the data dir. DOCKHAND_URL without any token is not an API call either: that
 * is the machine's owner making the first admin token with a shell that names the server.
 */
function overApi(options: Remote): boolean {
  if (options.local) {
    if (options.server) throw new DockhandError('bad_request', '--local: works on this machine\'s data dir; it cannot be combined with --server', { field: '--local', hint: 'give one of --local and --server' });
    return false;
  }
  const token = options.token ?? process.env.DOCKHAND_TOKEN;
  if (options.server) {
    if (!token) {
      throw new DockhandError('unauthenticated', '--token: managing tokens over the API needs an admin token', {
        field: '--token',
        hint: 'pass --token <admin token> (or set DOCKHAND_TOKEN); with --local the command works on this machine\'s DOCKHAND_DATA_DIR',
      });
    }
    return true;
  }
  return Boolean(process.env.DOCKHAND_URL && token);
}

/**
 * The data dir's store, refusing to make one as a side effect: only `create` may start a new
 * database, and only when no server is named or --local says so.
 */
async function onDataDir<T>(deps: Deps, options: Remote, may: 'create' | 'use', fn: (store: Store) => Promise<T>): Promise<T> {
  const database = deps.localDatabase();
  if (database && !database.exists) {
    const named = !options.local && process.env.DOCKHAND_URL;
    if (may === 'use' || named) {
      throw new DockhandError('not_found', `no Dockhand database at ${database.path}${named ? ` (DOCKHAND_URL names ${named}, but no token was given for it)` : ''}`, {
        field: 'DOCKHAND_DATA_DIR',
        hint: named
          ? `to manage tokens on ${named}, pass --token <admin token> (or set DOCKHAND_TOKEN); to make the first admin token on the server's machine, run it there with DOCKHAND_DATA_DIR=<its data dir> and --local`
          : 'set DOCKHAND_DATA_DIR to the server\'s data dir, or use --server URL with an admin --token',
      });
    }
  }
  return deps.withStore(fn);
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

function describeToken(info: TokenView): string {
  const state = info.revokedAt ? 'revoked' : info.expired ? `expired ${info.expiresAt}` : info.expiresAt ? `expires ${info.expiresAt}` : 'no expiry';
  return `${info.id}  ${info.user.padEnd(16)} ${info.scopes.join(',').padEnd(24)} ${state.padEnd(30)} ${info.label}`.trimEnd();
}

export function addTokenCommands(program: Command, deps: Deps): void {
  const { out } = deps;
  const token = program.command('token').description('API tokens: over the API with --server URL (or DOCKHAND_URL) and an admin --token (or DOCKHAND_TOKEN); with --local or no server named, on this machine\'s DOCKHAND_DATA_DIR');
  const withLocal = (command: Command) => deps.clientOptions(command).option('--local', 'work on this machine\'s DOCKHAND_DATA_DIR even when DOCKHAND_URL and DOCKHAND_TOKEN are set');

  withLocal(token.command('create [user]'))
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
        : await onDataDir(deps, options, 'create', async (store) => {
          const existing = await store.getUser(user);
          // The machine's owner may change a role here (how the first admin is made); the API may not.
          if (existing && options.role && existing.role !== options.role) await store.createUser(user, options.role);
          const { role: _role, ...rest } = parsed.data;
          return createTokenFor(store, existing ? rest : parsed.data);
        }).catch(rethrowForCli);
      const { info } = created;
      if (!overApi(options)) {
        const database = deps.localDatabase();
        out(`stored in ${database ? database.path : 'the fleet database (DOCKHAND_DATABASE_URL)'}`);
      }
      out(`token ${info.id} for ${info.user} (shown once; scopes ${info.scopes.join(', ')}; ${info.expiresAt ? `expires ${info.expiresAt}` : 'no expiry'}):`);
      out(created.token);
    });

  withLocal(token.command('list'))
    .description('tokens and their scopes and expiry (never their secrets)')
    .option('--user <name>', 'only this user\'s')
    .option('--json', 'print JSON')
    .action(async (options: Remote & { user?: string; json?: boolean }) => {
      const tokens = overApi(options)
        ? (await deps.client(options).request('GET', `/v1/tokens${options.user ? `?user=${encodeURIComponent(options.user)}` : ''}`, TokenListResponse)).tokens
        : await onDataDir(deps, options, 'use', async (store) => Promise.all((await store.listTokens(options.user)).map((info) => viewOf(store, info))));
      if (options.json) return out(JSON.stringify(tokens, null, 2));
      for (const info of tokens) out(describeToken(info));
    });

  withLocal(token.command('revoke <id>'))
    .description('revoke a token: it is refused from now on')
    .action(async (id: string, options: Remote) => {
      if (overApi(options)) await deps.client(options).request('DELETE', `/v1/tokens/${encodeURIComponent(id)}`, z.object({ revoked: z.literal(true) }));
      else await onDataDir(deps, options, 'use', async (store) => {
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
