import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { Command, Option } from 'commander';
import { CreateTaskRequest, CreateTaskResponse, Task, TaskListResponse, isFinalState, type TaskState } from '@dockhand/protocol';
import { loadConfig } from '../config';
import { DockhandError } from '../errors';
import { LocalForge } from '../forge';
import { startServer } from '../server';
import { PostgresStore } from '../store/postgres';
import { SqliteStore } from '../store/sqlite';
import { ApiClient } from './client';
import { registerEvalCommands } from './eval';
import { describeEvent, taskLine } from './format';
import { addRepoCommands } from './repo-commands';
import { addReviewCommands } from './review-commands';
import { addPullRequestCommands } from './pr-commands';
import { addProvenanceCommands } from './provenance-commands';
import { addSecretCommands, readAllStdin } from './secret-commands';
import { addTokenCommands } from './token-commands';
import { addVerifyCommands } from './verify-commands';
import { OPTION_OF_FIELD, resolveSubmitTarget } from './submit-repo';

/*
 * `dockhand` — the server and a thin client of its API.
 *   serve                          run the fleet server (config from DOCKHAND_* env / DOCKHAND_CONFIG)
 *   submit                         POST a ticket, stream the trajectory, print the PR link
 *   repo add|list|remove|check     registered repositories and their readiness (API)
 *   tasks                          list tasks
 *   approve|reject <task> [appr]   decide a review (or one approval request); approve --reject-file <path> leaves files out
 *   secret set|list|rm <repo>      a repository's secrets (admins, owners; API): the value from stdin or --from-file, never shown
 *   token create|list|revoke       API tokens: over the API with --server/DOCKHAND_URL + an admin token, else (or --local) on the data dir
 *   pr merge|close <repo> <n>      local forge only (direct on the data dir)
 *   pr comment|review|checks|check <repo> <n>   comments, reviews and checks on a local-forge PR (API)
 *   verify task <id> [--local]     recompute a task's event hash chain (API, or --local on the data dir's store); exits 1 naming the first event that does not match
 *   signing-key                    the server's public signing key and its allowed_signers line (data dir)
 *   verify commit <repo> <sha>     a pushed commit's signature, committer and trailers, each check named (data dir)
 * Client commands read DOCKHAND_URL and DOCKHAND_TOKEN (or --server/--token).
 */

const out = (line: string) => process.stdout.write(`${line}\n`);

function client(options: { server?: string; token?: string }): ApiClient {
  return new ApiClient(options.server ?? process.env.DOCKHAND_URL ?? 'http://127.0.0.1:8737', options.token ?? process.env.DOCKHAND_TOKEN);
}

async function withStore<T>(fn: (store: SqliteStore | PostgresStore, dataDir: string) => Promise<T>): Promise<T> {
  const config = loadConfig();
  // The fleet's Postgres when DOCKHAND_DATABASE_URL names one, else the data dir's SQLite file.
  const store = config.databaseUrl ? await PostgresStore.open({ url: config.databaseUrl }) : new SqliteStore(join(config.dataDir, 'dockhand.db'));
  return fn(store, config.dataDir).finally(() => store.close());
}

/** The data dir's SQLite database (undefined with Postgres), read without creating anything. */
function localDatabase(): { path: string; exists: boolean } | undefined {
  const config = loadConfig();
  if (config.databaseUrl) return undefined;
  const path = join(config.dataDir, 'dockhand.db');
  return { path, exists: existsSync(path) };
}

const clientOptions = (command: Command) =>
  command.option('--server <url>', 'server URL (DOCKHAND_URL)').option('--token <token>', 'API token (DOCKHAND_TOKEN)');

function positiveInt(name: string) {
  return (value: string): number => {
    const number = Number(value);
    if (!Number.isInteger(number) || number < 1) throw new DockhandError('bad_request', `${name}: must be a whole number of at least 1, got ${JSON.stringify(value)}`, { field: name });
    return number;
  };
}

/** `dockhand serve` flags as configuration overrides (dotted keys; they win over the environment). */
export function serveOverrides(options: ServeOptions): Record<string, unknown> {
  return {
    ...(options.role ? { role: options.role } : {}),
    ...(options.port !== undefined ? { port: options.port } : {}),
    ...(options.host !== undefined ? { host: options.host } : {}),
    ...(options.dataDir !== undefined ? { dataDir: options.dataDir } : {}),
    ...(options.modelRoutine !== undefined ? { 'model.routine': options.modelRoutine } : {}),
    ...(options.modelTpm !== undefined ? { 'modelBudget.inputTokensPerMinute': options.modelTpm } : {}),
    ...(options.modelRpm !== undefined ? { 'modelBudget.requestsPerMinute': options.modelRpm } : {}),
  };
}

interface ServeOptions { role?: string; port?: number; host?: string; dataDir?: string; modelTpm?: number; modelRpm?: number; modelRoutine?: string }

/** A TCP port: 0 (any free one) to 65535. */
function portNumber(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0 || number > 65_535) throw new DockhandError('bad_request', `--port: must be a whole number from 0 to 65535, got ${JSON.stringify(value)}`, { field: '--port' });
  return number;
}

export function buildCli(): Command {
  const program = new Command('dockhand').description('Ticket-to-pull-request coding agent').showHelpAfterError();

  program
    .command('serve')
    .description('run the fleet server')
    .addOption(new Option('--role <role>', 'all: one process is the fleet; api: REST + WebSocket only; worker: tasks and sandboxes only (api and worker share a Postgres store, DOCKHAND_DATABASE_URL)').choices(['all', 'api', 'worker']))
    .option('--port <n>', 'the API\'s port (default DOCKHAND_PORT, else 8737; 0: any free port)', portNumber)
    .option('--host <address>', 'the address to listen on (default DOCKHAND_HOST, else 127.0.0.1)')
    .option('--data-dir <dir>', 'where the database, forge, mirrors and snapshots\' records live (default DOCKHAND_DATA_DIR, else ./.dockhand-data)')
    .option('--model-tpm <n>', 'fleet rate budget: model input tokens per minute for the whole fleet, shared through Postgres (default DOCKHAND_MODEL_BUDGET_TPM; unset: none)', positiveInt('--model-tpm'))
    .option('--model-rpm <n>', 'fleet rate budget: model requests per minute for the whole fleet (default DOCKHAND_MODEL_BUDGET_RPM)', positiveInt('--model-rpm'))
    .option('--model-routine <model>', 'the model for routine tasks (--priority routine) fleet-wide; a repository\'s routineModel in .dockhand/policy.yml wins (default DOCKHAND_MODEL_ROUTINE; unset: DOCKHAND_MODEL)')
    .action(async (options: ServeOptions) => {
      await startServer(loadConfig(process.env, serveOverrides(options)));
    });

  clientOptions(program.command('submit'))
    .description('submit a ticket, stream the trajectory and print the PR link')
    .requiredOption('--title <title>', 'ticket title')
    .option('--body <text>', 'ticket body', '')
    .option('--issue <id>', 'forge issue number (makes it an issue ticket)')
    .option('--repo <repo>', 'a registered repository name, or the path of a local git repository (default: the current directory)')
    .option('--base <sha>', 'base commit (default: HEAD of that repository)')
    .addOption(new Option('--priority <priority>', 'scheduling priority').choices(['normal', 'routine']).default('normal'))
    .option('--approve', 'approve the diff when it reaches review (push + PR)')
    .option('--allow-test-edits', 'the ticket asks for a test change: let the agent change existing tests (recorded in the task and the PR)')
    .option('--test <test>', 'a test that reproduces the bug (test id, name or file; repeatable): it must pass before the task finishes, also when it fails at the base', (value: string, previous: string[]) => [...previous, value], [])
    .option('--no-follow', 'return after submitting')
    .action(async (options: { title: string; body: string; issue?: string; repo?: string; base?: string; priority: string; approve?: boolean; allowTestEdits?: boolean; test: string[]; follow: boolean; server?: string; token?: string }) => {
      const api = client(options);
      const target = await resolveSubmitTarget(api, options, process.cwd());
      for (const note of target.notes) out(note);
      const body = CreateTaskRequest.safeParse({
        ticket: options.issue ? { kind: 'issue', id: options.issue, title: options.title, body: options.body } : { kind: 'text', title: options.title, body: options.body },
        context: { repo: target.repo, baseSha: target.baseSha, ...(target.branch ? { branch: target.branch } : {}), dirty: target.dirty },
        priority: options.priority,
        allowTestEdits: options.allowTestEdits === true,
        ...(options.test.length > 0 ? { reproducingTests: options.test } : {}),
      });
      if (!body.success) {
        const field = body.error.issues[0]?.path.join('.') ?? '';
        throw new DockhandError('bad_request', `${OPTION_OF_FIELD[field] ?? field}: ${body.error.issues[0]?.message}`, { field });
      }
      const { id } = await api.request('POST', '/v1/tasks', CreateTaskResponse, body.data);
      out(`task ${id} submitted`);
      if (!options.follow) return;
      let finalState: TaskState | undefined;
      await api.streamEvents(id, 0, (event) => {
        const line = describeEvent(event);
        if (line) out(`[${event.seq}] ${line}`);
        if (event.type !== 'task.state') return false;
        const state = event.data.state;
        if (state === 'awaiting_review' && options.approve) {
          void api.request('POST', `/v1/tasks/${id}/review`, Task, { action: 'approve', comments: [] }).catch((error: unknown) => out(`approve failed: ${String(error)}`));
          return false;
        }
        if (state === 'awaiting_review' || state === 'pr_open' || isFinalState(state)) {
          finalState = state;
          return true;
        }
        return false;
      });
      const task = await api.request('GET', `/v1/tasks/${id}`, Task);
      if (task.prUrl) out(`PR: ${task.prUrl}`);
      else if (finalState === 'awaiting_review') out(`review the diff, then: dockhand approve ${id}`);
      if (finalState && ['failed', 'cancelled', 'budget_exhausted'].includes(finalState)) process.exitCode = 1;
    });

  clientOptions(program.command('tasks'))
    .description('list tasks (yours; admins see all)')
    .option('--state <state>', 'only this state')
    .option('--repo <repo>', 'only this repo')
    .action(async (options: { state?: string; repo?: string; server?: string; token?: string }) => {
      const query = new URLSearchParams();
      if (options.state) query.set('state', options.state);
      if (options.repo) query.set('repo', options.repo);
      const page = await client(options).request('GET', `/v1/tasks?${query}`, TaskListResponse);
      for (const task of page.tasks) out(taskLine(task));
    });

  addReviewCommands(program, { client, out, clientOptions });

  addTokenCommands(program, { client, withStore, localDatabase, out, clientOptions });
  addSecretCommands(program, { client, out, clientOptions, readStdin: readAllStdin });
  const verify = addVerifyCommands(program, { client, out, clientOptions, withStore, localDatabase });

  const pr = program.command('pr').description('pull requests of the local forge (uses DOCKHAND_DATA_DIR)');
  for (const action of ['merge', 'close'] as const) {
    pr.command(`${action} <repo> <number>`).action((repo: string, number: string) => withStore(async (store, dataDir) => {
      const forge = new LocalForge({ dataDir: join(dataDir, 'forge'), store: store.pullRequests });
      const result = action === 'merge' ? await forge.merge(repo, Number(number)) : await forge.close(repo, Number(number));
      out(`${result.url}: ${result.state}${result.mergeSha ? ` at ${result.mergeSha}` : ''}`);
      out('the server records the outcome on the task at its next PR poll');
    }));
  }
  addPullRequestCommands(pr, { client, out, clientOptions });
  addRepoCommands(program, client, out, clientOptions);
  program.command('repo-create <name>').description('create a local forge repository directly on the data dir (no registration: use `repo add`)')
    .option('--from <path>', 'push the branches of this repository into it')
    .action((name: string, options: { from?: string }) => withStore(async (store, dataDir) => {
      const forge = new LocalForge({ dataDir: join(dataDir, 'forge'), store: store.pullRequests });
      out(await forge.createRepository(name, options.from));
    }));
  addProvenanceCommands(program, { out, config: () => loadConfig(), verify });
  registerEvalCommands(program);
  return program;
}

export async function main(argv: string[]): Promise<void> {
  try {
    await buildCli().parseAsync(argv);
  } catch (error) {
    if (error instanceof DockhandError) {
      // A server field the CLI sets from an option is named by that option.
      const option = error.field ? OPTION_OF_FIELD[error.field] : undefined;
      const message = option && !error.message.startsWith(option) ? `${option}: ${error.message}` : error.message;
      process.stderr.write(`error: ${message}${error.hint ? `\nhint: ${error.hint}` : ''}\n`);
    } else {
      process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    }
    process.exitCode = 1;
  }
}
