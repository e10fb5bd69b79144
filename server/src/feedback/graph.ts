import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { z } from 'zod';
import { isJsTestFile, JsResolver, parseJsModule } from './js-imports';
import { JsSymbolGraph } from './js-symbol-graph';
import type { JsSymbols } from './js-symbols';
import { isPyTestFile, parsePython, PyResolver } from './py-imports';
import { isSourcePath, type BaseSnapshot, type WorkspaceChanges } from './snapshot';

const JsUsesRecord = z.object({
  refs: z.array(z.string()),
  members: z.array(z.array(z.string())),
  modules: z.array(z.string()),
});
const JsSymbolsRecord = z.object({
  imports: z.array(z.object({ local: z.string(), specifier: z.string(), imported: z.string() })),
  exports: z.array(z.object({ exported: z.string(), local: z.string().optional(), specifier: z.string().optional(), imported: z.string().optional() })),
  stars: z.array(z.string()),
  declarations: z.array(z.object({ name: z.string(), hash: z.string(), uses: JsUsesRecord })),
  init: JsUsesRecord,
  opaque: z.boolean(),
});

/** What parsing one file yields; the expensive part, cached per base SHA. */
const FileRecord = z.union([
  z.object({
    kind: z.literal('js'),
    parsed: z.object({
      specifiers: z.array(z.string()),
      topLevel: z.array(z.string()),
      hub: z.boolean(),
      symbols: JsSymbolsRecord,
    }),
  }),
  z.object({
    kind: z.literal('py'),
    parsed: z.object({
      imports: z.array(z.object({ module: z.string(), level: z.number(), names: z.array(z.string()) })),
      defined: z.array(z.string()),
      words: z.array(z.string()),
      attributes: z.array(z.string()),
      imported: z.array(z.string()),
      starImport: z.boolean(),
      topLevel: z.array(z.string()),
    }),
  }),
]);
type FileRecord = z.infer<typeof FileRecord>;

const CachedSnapshot = z.object({
  version: z.literal(5),
  baseSha: z.string(),
  files: z.array(z.string()),
  manifests: z.record(z.string(), z.string()),
  records: z.record(z.string(), FileRecord),
});
type CachedSnapshot = z.infer<typeof CachedSnapshot>;

export function parseRecord(path: string, text: string): FileRecord | undefined {
  if (!isSourcePath(path)) return undefined;
  if (path.endsWith('.py')) return { kind: 'py', parsed: parsePython(text) };
  return { kind: 'js', parsed: parseJsModule(path, text) };
}

function isManifest(path: string): boolean {
  return /(^|\/)(package\.json|tsconfig[^/]*\.json|jsconfig\.json)$/.test(path);
}

/** Parses a base snapshot into the cacheable form. */
export function indexSnapshot(snapshot: BaseSnapshot): CachedSnapshot {
  const records: Record<string, FileRecord> = {};
  const manifests: Record<string, string> = {};
  for (const [path, text] of snapshot.contents) {
    if (isManifest(path)) manifests[path] = text;
    const record = parseRecord(path, text);
    if (record) records[path] = record;
  }
  return { version: 5, baseSha: snapshot.baseSha, files: snapshot.files, manifests, records };
}

/**
 * Parsed snapshots per (repo, base SHA): in memory, and as JSON files under `dir` so a restarted
 * server or a second task on the same base skips the read and the parse.
 */
export class GraphCache {
  private readonly memory = new Map<string, CachedSnapshot>();

  constructor(private readonly dir?: string) {}

  private key(repo: string, baseSha: string): string {
    return createHash('sha256').update(`${repo}\0${baseSha}`).digest('hex').slice(0, 24);
  }

  async get(repo: string, baseSha: string, load: () => Promise<BaseSnapshot>): Promise<CachedSnapshot> {
    const key = this.key(repo, baseSha);
    const cached = this.memory.get(key);
    if (cached) return cached;
    if (this.dir) {
      try {
        const parsed = CachedSnapshot.safeParse(JSON.parse(await readFile(join(this.dir, `${key}.json`), 'utf8')));
        if (parsed.success && parsed.data.baseSha === baseSha) {
          this.memory.set(key, parsed.data);
          return parsed.data;
        }
      } catch {
        // missing or unreadable cache file: rebuild
      }
    }
    const indexed = indexSnapshot(await load());
    this.memory.set(key, indexed);
    if (this.dir) {
      await mkdir(this.dir, { recursive: true });
      await writeFile(join(this.dir, `${key}.json`), JSON.stringify(indexed));
    }
    return indexed;
  }
}

/** The import graph of the workspace: the cached base with the workspace's changes laid over it. */
export interface ImpactGraph {
  files: Set<string>;
  /** Every resolved import edge, file → files it loads. */
  raw: Map<string, Set<string>>;
  /** Edges with package hubs narrowed to the submodules a file names (see `buildGraph`). */
  effective: Map<string, Set<string>>;
  tests: Set<string>;
  records: Map<string, FileRecord>;
  hubs: Set<string>;
  /** JS/TS bindings and re-exports, followed name by name (`js-symbol-graph.ts`). */
  symbols: JsSymbolGraph;
}

export function overlayChanges(base: CachedSnapshot, changes: WorkspaceChanges): { files: Set<string>; records: Map<string, FileRecord>; manifests: Map<string, string> } {
  const files = new Set(base.files);
  const records = new Map(Object.entries(base.records));
  const manifests = new Map(Object.entries(base.manifests));
  for (const path of changes.deleted) {
    files.delete(path);
    records.delete(path);
    manifests.delete(path);
  }
  for (const path of changes.changed) {
    files.add(path);
    const text = changes.contents.get(path);
    if (text === undefined) continue;
    const record = parseRecord(path, text);
    if (record) records.set(path, record);
    if (isManifest(path)) manifests.set(path, text);
  }
  return { files, records, manifests };
}

/**
 * Builds the graph. Python packages need one refinement to be useful: nearly every test does
 * `import networkx as nx`, and the package `__init__.py` star-imports every submodule, so plain
 * reachability selects the whole suite for any change. An edge into a package `__init__.py` (a
 * "hub") therefore reaches a submodule only when the importing file mentions one of the names that
 * submodule defines or re-exports (or its module name). A changed hub, or a changed module whose
 * import-time statements changed, falls back to plain reachability (`raw`). JS/TS files get the
 * finer symbol graph instead (`symbols`); their `effective` edges are the raw ones.
 */
export function buildGraph(files: Set<string>, records: Map<string, FileRecord>, manifests: Map<string, string>): ImpactGraph {
  const js = new JsResolver(files, manifests);
  const py = new PyResolver(files);
  const raw = new Map<string, Set<string>>();
  const hubTargets = new Map<string, Set<string>>();
  const tests = new Set<string>();
  for (const [path, record] of records) {
    const targets = new Set<string>();
    const hubs = new Set<string>();
    if (record.kind === 'js') {
      for (const specifier of record.parsed.specifiers) {
        for (const target of js.resolve(path, specifier)) targets.add(target);
      }
      if (isJsTestFile(path)) tests.add(path);
    } else {
      for (const entry of record.parsed.imports) {
        for (const target of py.resolve(path, entry)) {
          targets.add(target.file);
          if (target.hub) hubs.add(target.file);
        }
      }
      if (isPyTestFile(path)) tests.add(path);
    }
    targets.delete(path);
    raw.set(path, targets);
    hubTargets.set(path, hubs);
  }
  // pytest runs every conftest.py above a test first: their imports are the test's imports.
  for (const test of tests) {
    if (!test.endsWith('.py')) continue;
    let dir = posix.dirname(test);
    for (;;) {
      const conftest = dir === '.' ? 'conftest.py' : posix.join(dir, 'conftest.py');
      if (records.has(conftest)) raw.get(test)?.add(conftest);
      if (dir === '.') break;
      dir = posix.dirname(dir);
    }
  }

  const hubSet = new Set<string>();
  for (const [path, record] of records) if (isHubRecord(path, record)) hubSet.add(path);
  const members = new Map<string, string[]>();
  const membersOf = (hub: string): string[] => {
    const known = members.get(hub);
    if (known) return known;
    const seen = new Set<string>([hub]);
    const queue = [hub];
    const found: string[] = [];
    while (queue.length > 0) {
      const current = queue.pop() ?? '';
      for (const target of raw.get(current) ?? []) {
        if (seen.has(target)) continue;
        seen.add(target);
        found.push(target);
        if (hubSet.has(target)) queue.push(target);
      }
    }
    members.set(hub, found);
    return found;
  };
  const namesOf = new Map<string, Set<string>>();
  const moduleName = new Map<string, string>();
  for (const [path, record] of records) {
    if (record.kind !== 'py') continue;
    namesOf.set(path, new Set(record.parsed.defined));
    const stem = posix.basename(path).replace(/\.[^.]+$/, '');
    moduleName.set(path, stem === '__init__' || stem === 'index' ? posix.basename(posix.dirname(path)) : stem);
  }
  // A file reaches a module behind a hub by one of its names, or by the module's own name used
  // as an attribute (`nx.community.louvain`); a bare word in prose does not count.
  const mentions = (words: Set<string>, attributes: Set<string>, target: string): boolean => {
    for (const name of namesOf.get(target) ?? []) if (words.has(name)) return true;
    return attributes.has(moduleName.get(target) ?? '');
  };

  const effective = new Map<string, Set<string>>();
  const symbols = new Map<string, JsSymbols>();
  for (const [path, record] of records) {
    const targets = raw.get(path) ?? new Set<string>();
    if (record.kind === 'js') {
      symbols.set(path, record.parsed.symbols);
      effective.set(path, targets);
      continue;
    }
    const words = new Set(record.parsed.words);
    const attributes = new Set(record.parsed.attributes);
    const edges = new Set<string>();
    const selfIsHub = hubSet.has(path);
    // Through a package, Python code reaches a name as `pkg.name`, `from pkg import name`, or a
    // star import; a bare word elsewhere (a local variable called `sigma`) is not a use of it.
    const throughHub = !selfIsHub && !record.parsed.starImport ? new Set([...record.parsed.attributes, ...record.parsed.imported]) : words;
    for (const target of targets) {
      // A hub's own imports are what it re-exports: only the ones its code uses are its edges.
      if (!selfIsHub || hubSet.has(target) || target.endsWith('conftest.py') || mentions(words, attributes, target)) edges.add(target);
    }
    for (const hub of hubTargets.get(path) ?? []) {
      for (const member of membersOf(hub)) if (mentions(throughHub, attributes, member)) edges.add(member);
    }
    edges.delete(path);
    effective.set(path, edges);
  }
  const resolved = new Map<string, string[]>();
  const resolveJs = (from: string, specifier: string): string[] => {
    const key = `${from}\0${specifier}`;
    let targets = resolved.get(key);
    if (!targets) resolved.set(key, (targets = js.resolve(from, specifier)));
    return targets;
  };
  return { files, raw, effective, tests, records, hubs: hubSet, symbols: new JsSymbolGraph(symbols, resolveJs) };
}

/** Python package `__init__.py` files and JS barrels (index files, modules made of re-exports). */
export function isHubRecord(path: string, record: FileRecord | undefined): boolean {
  if (!record) return false;
  return record.kind === 'py' ? posix.basename(path) === '__init__.py' : record.parsed.hub;
}

function reverse(edges: Map<string, Set<string>>): Map<string, string[]> {
  const reversed = new Map<string, string[]>();
  for (const [from, targets] of edges) {
    for (const target of targets) {
      const list = reversed.get(target);
      if (list) list.push(from);
      else reversed.set(target, [from]);
    }
  }
  return reversed;
}

/** Test files that (transitively) load one of `starts` along `edges`. */
export function dependentTests(graph: ImpactGraph, starts: string[], useRaw: boolean, cache: Map<string, Map<string, string[]>>): string[] {
  const kind = useRaw ? 'raw' : 'effective';
  let reversed = cache.get(kind);
  if (!reversed) {
    reversed = reverse(useRaw ? graph.raw : graph.effective);
    cache.set(kind, reversed);
  }
  const seen = new Set<string>(starts);
  const queue = [...starts];
  const found: string[] = [];
  while (queue.length > 0) {
    const current = queue.pop() ?? '';
    if (graph.tests.has(current)) found.push(current);
    for (const next of reversed.get(current) ?? []) {
      if (seen.has(next)) continue;
      seen.add(next);
      queue.push(next);
    }
  }
  return found;
}

/**
 * Test files a change to the bindings `names` of the JS/TS file `path` can affect: those whose
 * code reaches one of them through the symbol graph, and those that load (at all) a file whose
 * load-time code reaches one.
 */
export function symbolDependentTests(graph: ImpactGraph, path: string, names: string[], cache: Map<string, Map<string, string[]>>): string[] {
  const { whole, init } = graph.symbols.dependents(path, names);
  const found = new Set([...whole].filter((file) => graph.tests.has(file)));
  for (const test of dependentTests(graph, [...init], true, cache)) found.add(test);
  return [...found];
}

/** Top-level bindings of a JS/TS file whose declaration text differs between base and workspace. */
export function changedBindings(before: FileRecord | undefined, after: FileRecord | undefined): string[] {
  if (after?.kind !== 'js') return [];
  const now = new Map(after.parsed.symbols.declarations.map((declaration) => [declaration.name, declaration.hash]));
  if (before?.kind !== 'js') return [...now.keys()];
  const then = new Map(before.parsed.symbols.declarations.map((declaration) => [declaration.name, declaration.hash]));
  const changed = [...now].filter(([name, hash]) => then.get(name) !== hash).map(([name]) => name);
  for (const name of then.keys()) if (!now.has(name)) changed.push(name);
  return changed;
}

/** Did a change touch statements that run at import time (beyond function and method bodies)? */
export function changesImportTime(before: FileRecord | undefined, after: FileRecord | undefined): boolean {
  if (!before || !after || before.kind !== after.kind) return true;
  return !sameLines(before.parsed, after.parsed);
}

function sameLines(before: { topLevel: string[] }, after: { topLevel: string[] }): boolean {
  if (before.topLevel.length !== after.topLevel.length) return false;
  return before.topLevel.every((line, index) => line === after.topLevel[index]);
}
