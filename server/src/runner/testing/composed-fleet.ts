import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { loadConfig } from '../../config';
import { LocalForge } from '../../forge';
import { createFleet, type Fleet } from '../fleet';
import { FakeSandboxProvider, ScriptedAgent, editLikeTheAgent, type AgentScript } from './fakes';

const gitEnv = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
export const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: gitEnv, encoding: 'utf8' }).trim();

export interface ComposedFleet {
  dir: string;
  fleet: Fleet;
  forge: LocalForge;
  /** The local forge's bare repository `app`, holding `src/a.ts` ("one two three") and `files` at `sha`. */
  bare: string;
  sha: string;
  /** Bearer token of the user `alice`. */
  token: string;
}

export interface ComposedFleetOptions {
  /** More files in the repo at `sha`, e.g. `.dockhand/policy.yml`. */
  files?: Record<string, string>;
  /** The agent; default: one that makes `two` loud and finishes. */
  agent?: AgentScript;
  /** `DOCKHAND_PUSH_TOKEN`: a credential the server holds and must never store. */
  pushToken?: string;
}

const makeTwoLoud: AgentScript = async (input) => {
  await editLikeTheAgent(input, 'two', 'TWO');
  return { outcome: 'finished', summary: 'Made two loud.', diff: await input.sandbox.diff() };
};

/**
 * A whole fleet (SQLite store, API, scheduler, runner, policy, local forge) over a one-file repo,
 * with the in-memory sandbox and a scripted agent that makes `two` loud. The scheduler is started.
 */
export async function composedFleet(prefix: string, options: ComposedFleetOptions = {}): Promise<ComposedFleet> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const work = join(dir, 'work');
  const files = { 'src/a.ts': 'one\ntwo\nthree\n', ...options.files };
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(work, path)), { recursive: true });
    writeFileSync(join(work, path), content);
  }
  git(work, 'init', '-q', '-b', 'main');
  git(work, 'add', '-A');
  git(work, 'commit', '-q', '-m', 'base');
  const sha = git(work, 'rev-parse', 'HEAD');
  const config = loadConfig({ DOCKHAND_DATA_DIR: join(dir, 'data'), DOCKHAND_POLL_MS: '20', ...(options.pushToken ? { DOCKHAND_PUSH_TOKEN: options.pushToken } : {}) });
  const fleet = await createFleet(config, {
    sandboxes: new FakeSandboxProvider(files),
    agent: new ScriptedAgent(options.agent ?? makeTwoLoud),
  });
  const forge = new LocalForge({ dataDir: join(config.dataDir, 'forge'), store: fleet.store.pullRequests });
  // Registered as an admin would (`dockhand repo add app --from <work>`): the forge's copy is `bare`.
  const { registration } = await fleet.repos.register({ name: 'app', source: work }, await fleet.store.createUser('root', 'admin'));
  const bare = registration.mirrorSource ?? forge.repositoryPath('app');
  await fleet.store.createUser('alice', 'user');
  const token = (await fleet.store.createToken('alice')).token;
  fleet.scheduler.start();
  return { dir, fleet, forge, bare, sha, token };
}
