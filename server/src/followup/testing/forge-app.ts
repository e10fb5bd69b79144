import { temporaryDir } from '../../../../test/support/temporary-dirs';
import { PullRequestThreads } from '../../forge/comments';
import { LocalForge } from '../../forge/local-forge';
import { git, writeFiles } from '../../forge/testing/repo';
import { EventHub, EventLog } from '../../store/hub';
import { SqliteStore } from '../../store/sqlite';
import { stewardsOf } from '../stewards';

/**
 * The follow-up tests' common ground: an in-memory SQLite store with user alice, its event log,
 * a local forge holding repository `app` (one commit, src/a.ts = "one\ntwo\nthree\n") and the PR
 * threads of that forge. The caller closes `store`.
 */
export async function forgeApp(prefix: string): Promise<{ store: SqliteStore; log: EventLog; forge: LocalForge; threads: PullRequestThreads; baseSha: string; dataDir: string }> {
  const store = new SqliteStore(':memory:');
  const log = new EventLog(store, new EventHub());
  const dataDir = temporaryDir(`${prefix}-`);
  const forge = new LocalForge({ dataDir: `${dataDir}/forge`, store: store.pullRequests });
  const source = temporaryDir(`${prefix}-src-`);
  git(source, 'init', '-q', '-b', 'main');
  writeFiles(source, { 'src/a.ts': 'one\ntwo\nthree\n' });
  git(source, 'add', '-A');
  git(source, 'commit', '-q', '-m', 'base');
  const baseSha = git(source, 'rev-parse', 'HEAD');
  await forge.createRepository('app', source);
  const threads = new PullRequestThreads({ forge, store: store.prThreads, stewards: (_repo, pr) => stewardsOf(store, pr) });
  await store.createUser('alice', 'user');
  return { store, log, forge, threads, baseSha, dataDir };
}
