/**
 * The census of issue #22: `npm run bench:census [-- --only owner/a,owner/b] [--mirrors DIR]
 * [--data-dir D] [--force] [--skip-host] [--concurrency N]`.
 *
 * For every repository of bench/census/repos.ts (fetched beforehand into `--mirrors`, default
 * /work/.mirror, as `<owner>+<name>/repo`; CI has none and never runs this bench):
 *  1. a clone with full history, the default branch by its real name at the listed commit;
 *  2. the host reference: the CI's install and test steps as listed, on this machine, with the
 *     Node the workflow asks for (Python: Debian's, see bench/census/host.ts);
 *  3. Dockhand: `repo add` + `repo check --json` through a real `dockhand serve` from this source.
 * Results are cached in `<data dir>/results.jsonl` per repository, commit and kind (`--force`
 * runs them again). Prints a table per repository, a table of blockers by cause, then one JSON
 * line: repos, host_green, ready, ready_share, verdict_agreement, ran_no_test, opaque_verifications,
 * median_cold_build_s, median_snapshot_start_s, blockers_by_cause.
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { checkRepo, startCensusServer, type CensusServer } from './census/dockhand';
import { hostReference, type HostResult } from './census/host';
import { CENSUS, censusProblems, type CensusRepo } from './census/repos';
import { summarize, tables, type DockhandResult, type Row } from './census/summary';

const { values } = parseArgs({
  options: {
    mirrors: { type: 'string', default: '/work/.mirror' },
    only: { type: 'string' },
    'data-dir': { type: 'string', default: '/var/tmp/census' },
    force: { type: 'boolean', default: false },
    'skip-host': { type: 'boolean', default: false },
    'skip-dockhand': { type: 'boolean', default: false },
    concurrency: { type: 'string', default: '1' },
    /** The server's port (the census's are 8900–8949; the replay model takes the next one). */
    port: { type: 'string', default: '8900' },
  },
  strict: true,
});

const say = (line: string) => process.stdout.write(`${line}\n`);
const dataDir = resolve(values['data-dir']);
const resultsFile = join(dataDir, 'results.jsonl');
const slug = (repo: string) => repo.replace('/', '+');
/** The local forge names a repository with one segment. */
const dockhandName = (repo: string) => repo.replace('/', '-');

type Stored = HostResult | DockhandResult;

/** The latest stored result of each kind per repository at its listed commit. */
function storedResults(): Map<string, Stored> {
  const latest = new Map<string, Stored>();
  if (!existsSync(resultsFile)) return latest;
  for (const line of readFileSync(resultsFile, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const parsed: Stored = JSON.parse(line);
    latest.set(`${parsed.kind} ${parsed.repo} ${parsed.commit}`, parsed);
  }
  return latest;
}

const store = (result: Stored) => appendFileSync(resultsFile, `${JSON.stringify(result)}\n`);

/** `<data dir>/repos/<owner+name>`: a full clone of the mirror, the default branch at the listed commit. */
function cloneOf(entry: CensusRepo): string {
  const mirror = join(resolve(values.mirrors), slug(entry.repo), 'repo');
  if (!existsSync(mirror)) throw new Error(`${entry.repo}: no mirror at ${mirror}; fetch it first (the fetch tool, github:${entry.repo})`);
  const clone = join(dataDir, 'repos', slug(entry.repo));
  if (!existsSync(join(clone, '.git'))) {
    mkdirSync(join(dataDir, 'repos'), { recursive: true });
    execFileSync('git', ['clone', '--quiet', '--no-checkout', mirror, clone]);
  }
  const head = execFileSync('git', ['-C', clone, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  const branch = execFileSync('git', ['-C', clone, 'symbolic-ref', '--short', '-q', 'HEAD'], { encoding: 'utf8' }).trim();
  // A fresh --no-checkout clone has no work tree yet: check the branch out (at the listed commit).
  if (head !== entry.commit || branch !== entry.branch || !existsSync(join(clone, '.git', 'index'))) execFileSync('git', ['-C', clone, 'checkout', '--quiet', '-B', entry.branch, entry.commit]);
  // The fetch tool's snapshots lack files of 4 MiB and more: such a repository is not as its authors keep it.
  const missing = execFileSync('git', ['-C', clone, 'status', '--porcelain'], { encoding: 'utf8' }).trim();
  if (missing) throw new Error(`${entry.repo}: the clone is not its commit as committed (the mirror lacks files?): ${missing.split('\n').slice(0, 3).join('; ')}`);
  return clone;
}

async function censusOf(entry: CensusRepo, stored: Map<string, Stored>, server: CensusServer | undefined): Promise<Row> {
  const row: Row = { repo: entry.repo };
  const clone = cloneOf(entry);
  const hostKey = `host ${entry.repo} ${entry.commit}`;
  const cachedHost = stored.get(hostKey);
  if (cachedHost?.kind === 'host' && (!values.force || values['skip-host'])) row.host = cachedHost;
  else if (!values['skip-host']) {
    say(`  ${entry.repo}: host reference (${entry.ci.workflow} ${entry.ci.job}${entry.ci.cell ? `, ${entry.ci.cell}` : ''})`);
    const host = await hostReference(entry, clone, dataDir, join(dataDir, 'host', slug(entry.repo)));
    store(host);
    row.host = host;
    const failed = host.steps.find((step) => step.exitCode !== 0);
    say(`  ${entry.repo}: host ${host.error ? `error: ${host.error}` : host.green ? 'green' : `red at \`${failed?.run.split('\n')[0]}\` (exit ${failed?.exitCode}${failed?.timedOut ? ', timed out' : ''})`}; ${host.counts.passed ?? '?'} passed, ${host.counts.failed ?? '?'} failed; ${host.seconds.toFixed(0)} s; ${host.toolchain}`);
  }
  const dockhandKey = `dockhand ${entry.repo} ${entry.commit}`;
  const cachedDockhand = stored.get(dockhandKey);
  if (cachedDockhand?.kind === 'dockhand' && (!values.force || values['skip-dockhand'])) row.dockhand = cachedDockhand;
  else if (server) {
    say(`  ${entry.repo}: repo add + repo check`);
    const checked = await checkRepo(server, dockhandName(entry.repo), entry.repo, entry.commit, clone);
    store(checked);
    row.dockhand = checked;
    say(`  ${entry.repo}: ${checked.ready ? 'READY' : 'NOT READY'}; ${checked.testCommand ?? '?'} (${checked.runner ?? '?'}): ${checked.passed} passed, ${checked.failed} failed, ${checked.preExisting} pre-existing${checked.ranNoTest ? ', RAN NO TEST' : ''}; ${checked.seconds.toFixed(0)} s${checked.error ? `; ${checked.error}` : ''}`);
    for (const blocker of checked.blockers) say(`    blocker: ${blocker.problem.replace(/\s+/g, ' ').slice(0, 300)} -> ${blocker.action.replace(/\s+/g, ' ').slice(0, 200)}`);
  }
  return row;
}

/** The list with its languages taken in turn, so that a run stopped early has some of each. */
function spread(list: CensusRepo[]): CensusRepo[] {
  const groups = ['javascript', 'typescript', 'python'].map((language) => list.filter((entry) => entry.language === language));
  const spreadOut: CensusRepo[] = [];
  for (let index = 0; spreadOut.length < list.length; index++) {
    for (const group of groups) {
      const entry = group[index];
      if (entry) spreadOut.push(entry);
    }
  }
  return spreadOut;
}

async function main(): Promise<void> {
  const problems = censusProblems(CENSUS);
  if (problems.length) throw new Error(`bench/census/repos.ts: ${problems.join('; ')}`);
  const only = values.only?.split(',').map((name) => name.trim()).filter(Boolean);
  const unknown = only?.filter((name) => !CENSUS.some((entry) => entry.repo === name)) ?? [];
  if (unknown.length) throw new Error(`--only: not in bench/census/repos.ts: ${unknown.join(', ')}`);
  const entries = spread(only ? CENSUS.filter((entry) => only.includes(entry.repo)) : CENSUS);
  mkdirSync(dataDir, { recursive: true });
  const stored = storedResults();
  // Host-green repositories first (ready_share counts them), then those without a host result, then red ones.
  const rank = (entry: CensusRepo) => {
    const host = stored.get(`host ${entry.repo} ${entry.commit}`);
    return host?.kind !== 'host' ? 1 : host.green ? 0 : 2;
  };
  entries.sort((a, b) => rank(a) - rank(b));
  const needsServer = !values['skip-dockhand'] && (values.force || entries.some((entry) => !stored.has(`dockhand ${entry.repo} ${entry.commit}`)));
  say(`census of ${entries.length} repositories; data ${dataDir} (results.jsonl, dockhand/server.log)`);
  const server = needsServer ? await startCensusServer(join(dataDir, 'dockhand'), Number(values.port)) : undefined;
  // Stopped (Ctrl-C, kill): the server goes too, and what is done stays in results.jsonl.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void server?.close().finally(() => process.exit(130)));
  const rows = new Map<string, Row>();
  try {
    const queue = [...entries];
    await Promise.all(Array.from({ length: Math.max(1, Number(values.concurrency)) }, async () => {
      for (let entry = queue.shift(); entry; entry = queue.shift()) {
        try {
          rows.set(entry.repo, await censusOf(entry, stored, server));
        } catch (error) {
          say(`  ${entry.repo}: census error: ${error instanceof Error ? error.message : String(error)}`);
          rows.set(entry.repo, { repo: entry.repo });
        }
      }
    }));
  } finally {
    await server?.close();
  }
  const ordered = entries.map((entry) => rows.get(entry.repo) ?? { repo: entry.repo });
  const summary = summarize(ordered);
  say('');
  for (const line of tables(ordered, summary)) say(line);
  say(JSON.stringify(summary));
}

await main();
