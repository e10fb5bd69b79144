import { parseNodeTap } from './node-tap';
import { fileBySuffix, parseJestJson, parseMochaJson, parseTap, shellQuote, toRepoPath, withMember, type ParsedRun } from './runners';
import { parseFlatTap } from './tap';
import { parseUvu } from './uvu';
import { PRELOAD_DIR, PRELOAD_SOURCE, PYTEST_PLUGIN_MODULE, PYTEST_PLUGIN_SOURCE, SIDE_CHANNEL_DIR, SITECUSTOMIZE_MODULE, SITECUSTOMIZE_SOURCE } from './side-channel-sources';
import type { TestCaseResult } from './types';

/*
 * Per-test results without rewriting the repository's command. A step runs exactly as written;
 * around it, in the same `bash -c`, the side channel's files are written to a directory of this
 * shell's own (`/tmp/dockhand/<shell pid>`, so two runs never share one), NODE_OPTIONS loads the
 * preload into every Node process of the step, PYTEST_PLUGINS loads the pytest plugin, and after
 * the step every report the runners wrote is printed behind a marker for `readSideChannel`.
 * What the preload and the plugin do: `side-channel-sources.ts`.
 *
 * node:test gets its reporter from NODE_OPTIONS itself (`--test-reporter=tap` to a file, beside
 * the usual reporter on stdout): Node accepts those options there from 18.20 / 20 on (tested on
 * 18.20.4 and 20.20.2); an older or unknown Node does not get them, since a Node that refuses an
 * option in NODE_OPTIONS refuses to start at all. A step that names its own `--test-reporter` is
 * left alone too (Node requires as many destinations as reporters, counted across both).
 *
 * tox runs its commands with an environment of its own (tox 3 and 4 pass on a short list, and
 * tox 3 drops PYTHONPATH with a warning): the side channel's variables are named for it to pass
 * on, `TOX_TESTENV_PASSENV` for tox 3 and `TOX_OVERRIDE=testenv.pass_env+=…` for tox 4.11+
 * (their own mechanisms for a caller's variables; each ignores the other's). `coverage run -m
 * unittest` and `python -m unittest` are counted by `sitecustomize.py` on PYTHONPATH.
 */

export const SIDE_CHANNEL_MARKER = '@@DOCKHAND-SIDE-CHANNEL@@';

/** The variables tox is asked to pass on to its commands: the side channel's own. */
const TOX_PASSED = ['DOCKHAND_RESULTS_DIR', 'PYTHONPATH', 'PYTEST_PLUGINS', 'PYTEST_ADDOPTS', 'NODE_OPTIONS'];

export interface SideChannelOptions {
  /** The Node version the sandbox runs (the recipe's), without the `v`; undefined: not known. */
  node?: string;
}

/** Does this Node accept `--test-reporter` in NODE_OPTIONS? */
export function nodeTestReporterAccepted(version: string | undefined): boolean {
  const [major = 0, minor = 0] = (version ?? '').replace(/^v/, '').split('.').map((part) => Number.parseInt(part, 10) || 0);
  return major >= 20 || (major === 18 && minor >= 20);
}

/**
 * The shell that runs `step` (a shell line, its own environment set before it) with the side
 * channel, then prints the reports and exits with the step's status. `isolate` runs the step in a
 * subshell, for a line Dockhand did not split (it may `exit` or `set -e`).
 */
export function withSideChannel(step: string, options: SideChannelOptions, isolate = false): string {
  const dir = `${SIDE_CHANNEL_DIR}/$$`;
  const nodeTest = nodeTestReporterAccepted(options.node) && !/--test-reporter/.test(step)
    ? ` --test-reporter=spec --test-reporter-destination=stdout --test-reporter=tap --test-reporter-destination=${dir}/results/node-test-$$.tap`
    : '';
  const prologue = [
    // The preload under a node_modules directory: coverage tools leave those out (Node's own
    // --experimental-test-coverage counted it, and census npm/hosted-git-info's 100% thresholds failed).
    `mkdir -p ${dir}/results ${dir}/${PRELOAD_DIR}`,
    `printf '%s' ${shellQuote(PRELOAD_SOURCE)} > ${dir}/${PRELOAD_DIR}/preload.cjs`,
    `printf '%s' ${shellQuote(PYTEST_PLUGIN_SOURCE)} > ${dir}/${PYTEST_PLUGIN_MODULE}.py`,
    `printf '%s' ${shellQuote(SITECUSTOMIZE_SOURCE)} > ${dir}/${SITECUSTOMIZE_MODULE}.py`,
    `export DOCKHAND_RESULTS_DIR=${dir}/results`,
    `export NODE_OPTIONS="--require ${dir}/${PRELOAD_DIR}/preload.cjs${nodeTest}\${NODE_OPTIONS:+ $NODE_OPTIONS}"`,
    `export PYTHONPATH="\${PYTHONPATH:+$PYTHONPATH:}${dir}"`,
    `export PYTEST_PLUGINS="${PYTEST_PLUGIN_MODULE}\${PYTEST_PLUGINS:+,$PYTEST_PLUGINS}"`,
    // pytest's cache would be a change in the workspace's diff.
    `export PYTEST_ADDOPTS="-p no:cacheprovider\${PYTEST_ADDOPTS:+ $PYTEST_ADDOPTS}"`,
    `export TOX_TESTENV_PASSENV="${TOX_PASSED.join(' ')}\${TOX_TESTENV_PASSENV:+ $TOX_TESTENV_PASSENV}"`,
    `export TOX_OVERRIDE="testenv.pass_env+=${TOX_PASSED.join(',')}\${TOX_OVERRIDE:+;$TOX_OVERRIDE}"`,
    // A task runner's cache replays a task's log instead of running its tests (census solidjs/solid:
    // the baseline's second `turbo run test` ran no vitest, so 978 tests passed in one run of two and
    // the check counted 0): every task runs, as on a CI machine without a cache.
    'export TURBO_FORCE=true NX_SKIP_NX_CACHE=true',
  ].join('; ');
  const body = isolate ? `(\n${step}\n)` : step;
  const epilogue = `dockhand_status=$?; for dockhand_report in ${dir}/results/*; do [ -s "$dockhand_report" ] || continue; echo; echo "${SIDE_CHANNEL_MARKER} \${dockhand_report##*/}"; cat "$dockhand_report"; done; rm -rf ${dir}; exit $dockhand_status`;
  return `${prologue}\n${body}\n${epilogue}`;
}

/** A step's output without the reports, and what the reports say (undefined: no runner reported). */
export interface SideChannelRead {
  output: string;
  parsed?: ParsedRun;
  /** The runners that reported (`jest`, `node-test`, …). */
  runners: string[];
}

/** Splits a step's stdout into its own output and the side channel's reports, and parses them. */
export function readSideChannel(stdout: string, files: Set<string>, cwd?: string): SideChannelRead {
  const parts = stdout.split(`\n${SIDE_CHANNEL_MARKER} `);
  const output = parts[0] ?? '';
  if (parts.length === 1) return { output, runners: [] };
  const runs: ParsedRun[] = [];
  const runners: string[] = [];
  for (const part of parts.slice(1)) {
    const newline = part.indexOf('\n');
    const name = part.slice(0, newline < 0 ? undefined : newline);
    const text = newline < 0 ? '' : part.slice(newline + 1);
    const runner = name.replace(/-\d+\.(json|tap|txt)$/, '');
    const parsed = parseReport(runner, text, files, cwd);
    if (!parsed) continue;
    runs.push(parsed);
    if (!runners.includes(runner)) runners.push(runner);
  }
  if (runs.length === 0) return { output, runners };
  const parsed: ParsedRun = { cases: runs.flatMap((run) => run.cases), failures: runs.flatMap((run) => run.failures), reported: true };
  // Ids as a member's run always had them (`packages/a > suite > test`), so stored baselines keep matching.
  return { output, runners, parsed: cwd ? withMember(parsed, cwd) : parsed };
}

function parseReport(runner: string, text: string, files: Set<string>, cwd?: string): ParsedRun | undefined {
  switch (runner) {
    case 'jest':
    case 'vitest':
      return parseJestJson(text, files, cwd);
    case 'mocha':
      return parseMochaJson(text, files, cwd);
    case 'node-test':
      return parseTap(text, files, cwd);
    case 'pytest':
    case 'unittest':
      return parsePytestLines(text, files, cwd);
    case 'ava':
      return parseFlatTap(text, (printed) => toRepoPath(printed, files, cwd), { ava: true });
    case 'tape':
      return parseFlatTap(text, (printed) => toRepoPath(printed, files, cwd));
    case 'tap':
      return parseNodeTap(text, files, cwd);
    case 'uvu':
      return parseUvu(text, (printed, dir) => fileBySuffix(dir && dir !== '.' ? `${dir}/${printed}` : printed, files, cwd));
    default:
      return undefined;
  }
}

interface PytestLine {
  nodeid: string;
  when: string;
  outcome: string;
  message?: string;
}

/** The plugin's JSON lines: one case per node id (a failed setup or teardown fails it; a collection error is the file's load error). */
export function parsePytestLines(text: string, files: Set<string>, cwd?: string): ParsedRun {
  const byId = new Map<string, TestCaseResult>();
  const failures: string[] = [];
  for (const line of text.split('\n')) {
    let entry: PytestLine;
    try {
      entry = JSON.parse(line) as PytestLine;
    } catch {
      continue;
    }
    if (typeof entry.nodeid !== 'string') continue;
    // pytest prints node ids relative to its rootdir; a workspace member's run is relative to the member.
    const printedFile = entry.nodeid.split('::')[0] ?? entry.nodeid;
    const file = toRepoPath(printedFile, files, cwd);
    const id = file === printedFile ? entry.nodeid : `${file}${entry.nodeid.slice(printedFile.length)}`;
    const outcome: TestCaseResult['outcome'] = entry.outcome === 'passed' ? 'passed' : entry.outcome === 'skipped' ? 'skipped' : 'failed';
    const known = byId.get(id);
    if (known?.outcome === 'failed') continue;
    const testCase: TestCaseResult = { id, file, outcome };
    if (outcome === 'failed') {
      testCase.message = (entry.message ?? '').trim().split('\n').pop() ?? '';
      failures.push(`✗ ${id}\n${entry.message ?? ''}`);
    }
    if (entry.when === 'collect') testCase.kind = 'load_error';
    byId.set(id, testCase);
  }
  return { cases: [...byId.values()], failures, reported: true };
}
