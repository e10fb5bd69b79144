import { posix } from 'node:path';
import picomatch from 'picomatch';
import { changedBindings, changesImportTime, dependentTests, symbolDependentTests, type ImpactGraph } from './graph';
import { isSourcePath, type WorkspaceChanges } from './snapshot';

export type Selection =
  | { mode: 'selected'; tests: string[]; reason: string }
  | { mode: 'full'; reason: string }
  | { mode: 'none'; reason: string };

/**
 * Picks the test files a change can affect. The rule is one-sided on purpose: the selection may
 * only be smaller than the full suite when every changed file is a source file the graph reaches
 * from at least one test. Config, lockfiles, fixtures and data, conftest.py, a deleted or
 * unreachable module, anything unknown: full suite, and the reason says which file forced it.
 */
export function selectTests(
  graph: ImpactGraph,
  base: { records: ImpactGraph['records']; graph: () => ImpactGraph },
  changes: WorkspaceChanges,
  fullSuiteOn: string[] = [],
): Selection {
  const all = [...changes.changed, ...changes.deleted];
  if (all.length === 0) return { mode: 'none', reason: 'no changes against the base: nothing to select' };
  const forceFull = fullSuiteOn.length > 0 ? picomatch(fullSuiteOn, { dot: true }) : undefined;
  const reversedCache = new Map<string, Map<string, string[]>>();
  const reversedBefore = new Map<string, Map<string, string[]>>();
  const selected = new Set<string>();
  const reasons: string[] = [];
  for (const path of all) {
    if (forceFull?.(path)) return { mode: 'full', reason: `${path} matches checks.fullSuiteOn: full suite` };
    if (!isSourcePath(path)) return { mode: 'full', reason: `${path} is not source the import graph can see: full suite` };
    if (posix.basename(path) === 'conftest.py') return { mode: 'full', reason: `${path} (pytest conftest) changed: full suite` };
    const deleted = changes.deleted.includes(path);
    const graphForPath = deleted ? base.graph() : graph;
    // A changed package __init__ or import-time statement can break every importer: plain reachability.
    const useRaw = deleted || graph.hubs.has(path) || changesImportTime(base.records.get(path), graph.records.get(path));
    const record = graph.records.get(path);
    let tests: string[];
    let how: string;
    if (!useRaw && record?.kind === 'js') {
      // By name: the declarations the change touched, else (comments, formatting) all of them.
      const touched = changedBindings(base.records.get(path), record);
      const all = record.parsed.symbols.declarations.map((declaration) => declaration.name);
      tests = touched.length > 0 ? symbolDependentTests(graph, path, touched, reversedCache) : [];
      how = `${touched.slice(0, 3).join(', ')}${touched.length > 3 ? ', …' : ''} reached by ${tests.length} test file(s)`;
      if (tests.length === 0) {
        tests = symbolDependentTests(graph, path, all, reversedCache);
        how = `reached by ${tests.length} test file(s) (any of its bindings)`;
      }
    } else {
      tests = dependentTests(graphForPath, [path], useRaw, deleted ? reversedBefore : reversedCache);
      how = `reached by ${tests.length} test file(s)${useRaw ? ' (import-time change: every importer)' : ''}`;
    }
    if (tests.length === 0) return { mode: 'full', reason: `no test reaches ${path}: full suite` };
    for (const test of tests) selected.add(test);
    reasons.push(`${path} ${graph.tests.has(path) ? 'is a test' : how}`);
  }
  const tests = [...selected].sort();
  return { mode: 'selected', tests, reason: `${tests.length} of ${graph.tests.size} test files: ${reasons.join('; ')}` };
}
