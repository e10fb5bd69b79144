import { posix } from 'node:path';

/*
 * Import analysis for Python. A line scanner rather than Python's `ast`: the analysis runs on the
 * server (the sandbox may be any image) and only needs import statements, top-level names and the
 * identifiers a file mentions. It over-approximates on purpose (an `import` line inside a
 * docstring adds an edge), which can only widen a selection, never narrow it.
 */

export interface PyImport {
  /** Dotted module path after the leading dots ('' for `from . import x`). */
  module: string;
  /** Number of leading dots (0 = absolute). */
  level: number;
  /** Names of a `from … import a, b` ('*' for a star import); empty for `import a.b`. */
  names: string[];
}

export interface PyParsed {
  imports: PyImport[];
  /** Names the module defines or re-exports at top level (what `pkg.name` can reach). */
  defined: string[];
  /** Identifiers used anywhere outside import statements, `__all__` and triple-quoted strings. */
  words: string[];
  /** Identifiers used as attributes (`nx.cycles`, `nx.pairwise`): how code reaches through a package. */
  attributes: string[];
  /** Names taken by `from x import name` anywhere in the file. */
  imported: string[];
  /** Whether the file does `from x import *` (then any word may come from a package). */
  starImport: boolean;
  /** Top-level statements that run at import time (not def/class/decorator lines), for change classification. */
  topLevel: string[];
}

const IDENTIFIER = /[A-Za-z_][A-Za-z0-9_]*/g;
const STRING_LITERAL = /[rbuf]*"(?:[^"\\]|\\.)*"|[rbuf]*'(?:[^'\\]|\\.)*'/gi;
const DYNAMIC_LOOKUP = /\b(getattr|hasattr|setattr|import_module|__import__|eval|exec|globals|locals|vars)\s*\(/;
const BLOCK_START = /^(if|elif|else|try|except|finally|with|for|while)\b/;

export function parsePython(text: string): PyParsed {
  const imports: PyImport[] = [];
  const defined = new Set<string>();
  const words = new Set<string>();
  const fromImported = new Set<string>();
  const attributes = new Set<string>();
  const stringWords = new Set<string>();
  const imported = new Set<string>();
  let starImport = false;
  let dynamic = false;
  const exported = new Set<string>();
  const topLevel: string[] = [];
  const lines = text.split('\n');
  let inTopLevelBlock = false;
  let openString: string | undefined;
  for (let index = 0; index < lines.length; index++) {
    let raw = lines[index] ?? '';
    // Docstrings and other triple-quoted text: prose, not code (their words would add edges).
    if (openString) {
      const close = raw.indexOf(openString);
      if (close < 0) continue;
      raw = ' '.repeat(close + 3) + raw.slice(close + 3);
      openString = undefined;
    }
    const stripped = stripTripleQuoted(raw);
    raw = stripped.text;
    openString = stripped.open;
    const indent = raw.length - raw.trimStart().length;
    let line = stripComment(raw).trim();
    if (line === '') continue;
    if (/^(import|from)\s/.test(line)) {
      // Join parenthesised and backslash continuations of the import statement.
      while ((line.includes('(') && !line.includes(')')) || line.endsWith('\\')) {
        index++;
        if (index >= lines.length) break;
        line = `${line.replace(/\\$/, '')} ${stripComment(lines[index] ?? '').trim()}`;
      }
      const parsed = parseImportStatement(line);
      if (parsed) {
        imports.push(...parsed.imports);
        for (const entry of parsed.imports) for (const name of entry.names) if (name === '*') starImport = true; else imported.add(name);
        // Imported names are not usage (code that uses them mentions them again below), and a
        // plain `import x as y` re-exports a module, which the graph reaches as a hub anyway.
        for (const name of parsed.bound) if (indent === 0 || inTopLevelBlock) fromImported.add(name);
        if (indent === 0) topLevel.push(line);
        continue;
      }
    }
    if (/^__all__\s*(\+?=|\.extend|\.append)/.test(line)) {
      // The export list names what the module re-exports, not what its code uses.
      let statement = line;
      let depth = bracketDepth(line);
      while (depth > 0 && index + 1 < lines.length) {
        const next = lines[++index] ?? '';
        statement += next;
        depth += bracketDepth(next);
      }
      for (const match of statement.matchAll(/["']([A-Za-z_]\w*)["']/g)) if (match[1]) exported.add(match[1]);
      continue;
    }
    // Words inside string literals count only in files that look names up dynamically
    // (getattr, import_module, …); elsewhere a string such as a warning filter is text.
    const code = line.replace(STRING_LITERAL, '""');
    for (const word of code.match(IDENTIFIER) ?? []) words.add(word);
    for (const literal of line.match(STRING_LITERAL) ?? []) for (const word of literal.match(IDENTIFIER) ?? []) stringWords.add(word);
    if (DYNAMIC_LOOKUP.test(code)) dynamic = true;
    for (const match of code.matchAll(/\.([A-Za-z_]\w*)/g)) if (match[1]) attributes.add(match[1]);
    if (indent === 0) {
      inTopLevelBlock = BLOCK_START.test(line);
      if (!/^(async\s+def|def|class)\s|^@/.test(line) && !/^("""|'''|"|')/.test(line)) topLevel.push(line);
    }
    if (indent === 0 || inTopLevelBlock) {
      const definition = /^(?:async\s+def|def|class)\s+([A-Za-z_]\w*)/.exec(line);
      if (definition?.[1]) defined.add(definition[1]);
      const assignment = /^([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*(?::[^=]+)?=(?!=)/.exec(line);
      if (assignment?.[1] && (indent === 0 || inTopLevelBlock)) {
        for (const name of assignment[1].split(',')) defined.add(name.trim());
      }
    }
  }
  // What `pkg.name` can reach after `from .module import *`: `__all__` when the module has one,
  // else every top-level name including the ones it imported.
  for (const name of exported.size > 0 ? exported : fromImported) defined.add(name);
  if (dynamic) {
    for (const word of stringWords) {
      words.add(word);
      attributes.add(word);
    }
  }
  return { imports, defined: [...defined], words: [...words], attributes: [...attributes], imported: [...imported], starImport, topLevel };
}

/** Removes closed triple-quoted strings from a line; reports the delimiter of one left open. */
function stripTripleQuoted(line: string): { text: string; open?: string } {
  let text = line;
  for (;;) {
    const match = /"""|'''/.exec(text);
    if (!match) return { text };
    const delimiter = match[0];
    const close = text.indexOf(delimiter, match.index + 3);
    if (close < 0) return { text: text.slice(0, match.index), open: delimiter };
    text = `${text.slice(0, match.index)}""${text.slice(close + 3)}`;
  }
}

function bracketDepth(text: string): number {
  return (text.match(/[[(]/g)?.length ?? 0) - (text.match(/[\])]/g)?.length ?? 0);
}

function stripComment(line: string): string {
  const hash = line.indexOf('#');
  // Good enough for import lines and identifiers; a '#' inside a string only drops words.
  return hash >= 0 ? line.slice(0, hash) : line;
}

function parseImportStatement(line: string): { imports: PyImport[]; bound: string[] } | undefined {
  const plain = /^import\s+(.+)$/.exec(line);
  if (plain?.[1]) {
    const imports: PyImport[] = [];
    const bound: string[] = [];
    for (const part of plain[1].split(',')) {
      const match = /^\s*([\w.]+)(?:\s+as\s+(\w+))?\s*$/.exec(part);
      if (!match?.[1]) continue;
      imports.push({ module: match[1], level: 0, names: [] });
      // `import a.b as c` binds a module alias, not a name the module defines.
    }
    return { imports, bound };
  }
  const from = /^from\s+(\.*)([\w.]*)\s+import\s+(.+)$/.exec(line);
  if (!from) return undefined;
  const names: string[] = [];
  const bound: string[] = [];
  for (const part of (from[3] ?? '').replace(/[()]/g, ' ').split(',')) {
    const match = /^\s*(\*|\w+)(?:\s+as\s+(\w+))?\s*$/.exec(part);
    if (!match?.[1]) continue;
    names.push(match[1]);
    if (match[1] !== '*') bound.push(match[2] ?? match[1], match[1]);
  }
  return { imports: [{ module: from[2] ?? '', level: (from[1] ?? '').length, names }], bound };
}

export interface PyTarget {
  file: string;
  /** A package `__init__.py`: reached for its own code, its submodules only by name (see graph.ts). */
  hub: boolean;
}

/**
 * Resolves imports against the repo's package roots: the repo root, `src/`, directories holding a
 * setup.py/pyproject.toml, and (pytest's default "prepend" import mode) the first directory above
 * a file that is not a package. Imports of anything outside the repo resolve to nothing.
 */
export class PyResolver {
  private readonly roots: string[];

  constructor(private readonly files: Set<string>) {
    const roots = new Set<string>(['', 'src']);
    for (const path of files) {
      if (/(^|\/)(setup\.py|pyproject\.toml|setup\.cfg)$/.test(path)) roots.add(posix.dirname(path) === '.' ? '' : posix.dirname(path));
    }
    this.roots = [...roots];
  }

  resolve(from: string, entry: PyImport): PyTarget[] {
    const targets: PyTarget[] = [];
    const bases =
      entry.level > 0 ? [relativeBase(from, entry.level)] : [this.scriptRoot(from), ...this.roots];
    for (const base of bases) {
      if (base === undefined) continue;
      const parts = entry.module ? entry.module.split('.') : [];
      const found = this.moduleChain(base, parts);
      if (!found) continue;
      targets.push(...found);
      const packageDir = posix.join(base, ...parts);
      for (const name of entry.names) {
        if (name === '*') continue;
        const sub = this.moduleFile(posix.join(packageDir, name));
        if (sub) targets.push(sub);
      }
      break;
    }
    return targets;
  }

  /** The module file plus every package `__init__.py` on the way to it. */
  private moduleChain(base: string, parts: string[]): PyTarget[] | undefined {
    const chain: PyTarget[] = [];
    const init = posix.join(base, '__init__.py');
    if (parts.length === 0) return this.files.has(init) ? [{ file: init, hub: true }] : undefined;
    for (let depth = 1; depth < parts.length; depth++) {
      const packageInit = posix.join(base, ...parts.slice(0, depth), '__init__.py');
      if (this.files.has(packageInit)) chain.push({ file: packageInit, hub: true });
    }
    const target = this.moduleFile(posix.join(base, ...parts));
    if (!target) return undefined;
    chain.push(target);
    return chain;
  }

  private moduleFile(path: string): PyTarget | undefined {
    const clean = path.replace(/^\.?\//, '');
    if (this.files.has(`${clean}.py`)) return { file: `${clean}.py`, hub: false };
    if (this.files.has(`${clean}/__init__.py`)) return { file: `${clean}/__init__.py`, hub: true };
    return undefined;
  }

  private scriptRoot(from: string): string {
    let dir = posix.dirname(from);
    while (dir !== '.' && this.files.has(posix.join(dir, '__init__.py'))) dir = posix.dirname(dir);
    return dir === '.' ? '' : dir;
  }
}

function relativeBase(from: string, level: number): string | undefined {
  let dir = posix.dirname(from);
  for (let step = 1; step < level; step++) {
    if (dir === '.' || dir === '') return undefined;
    dir = posix.dirname(dir);
  }
  return dir === '.' ? '' : dir;
}

export function isPyTestFile(path: string): boolean {
  const base = posix.basename(path);
  return /^test_.*\.py$/.test(base) || /^.+_test\.py$/.test(base);
}
