import { posix } from 'node:path';
import type ts from 'typescript';
import { typescript } from './typescript';
import { parseJsSymbols, type JsSymbols } from './js-symbols';

/*
 * Import analysis for JavaScript and TypeScript.
 *
 * Parsing uses TypeScript's own `preProcessFile`: a scanner pass (no type checking, no AST
 * allocation) built for exactly this question — which modules does a file reference — and it
 * understands `import`, `export … from`, `import type`, `require('x')` and `import('x')` in both
 * TS and JS syntax. es-module-lexer is faster but does not read TypeScript syntax or `require`.
 * Computed specifiers (`require(name)`) are invisible to any static scan; the selection therefore
 * only ever narrows the suite when every changed file is reached through the graph.
 */

const RESOLVE_EXTENSIONS = ['.ts', '.tsx', '.mts', '.cts', '.js', '.jsx', '.mjs', '.cjs', '.json'];

export function parseJsImports(text: string): string[] {
  const info = typescript().preProcessFile(text, true, true);
  return [...new Set(info.importedFiles.map((ref) => ref.fileName))];
}

interface PackageInfo {
  dir: string;
  name?: string;
  main?: string;
  exports?: unknown;
  imports?: unknown;
}

interface PathsConfig {
  dir: string;
  baseUrl?: string;
  paths: Array<{ pattern: string; targets: string[] }>;
}

/** Resolves specifiers the way Node, bundlers and tsc would, limited to files inside the repo. */
export class JsResolver {
  private readonly packagesByName = new Map<string, PackageInfo>();
  private readonly packagesByDir = new Map<string, PackageInfo>();
  private readonly pathConfigs = new Map<string, PathsConfig>();

  constructor(
    private readonly files: Set<string>,
    contents: Map<string, string>,
  ) {
    for (const [path, text] of contents) {
      const base = posix.basename(path);
      if (base === 'package.json') this.addPackage(path, text);
      else if (/^(tsconfig[^/]*|jsconfig)\.json$/.test(base)) this.addTsconfig(path, text, contents);
    }
  }

  private addPackage(path: string, text: string): void {
    const parsed = parseJsonc(text);
    if (!isRecord(parsed)) return;
    const info: PackageInfo = { dir: posix.dirname(path) };
    if (typeof parsed.name === 'string') info.name = parsed.name;
    const main = typeof parsed.module === 'string' ? parsed.module : parsed.main;
    if (typeof main === 'string') info.main = main;
    info.exports = parsed.exports;
    info.imports = parsed.imports;
    this.packagesByDir.set(info.dir, info);
    if (info.name) this.packagesByName.set(info.name, info);
  }

  private addTsconfig(path: string, text: string, contents: Map<string, string>): void {
    let options = compilerOptions(text);
    let configDir = posix.dirname(path);
    // Follow one relative `extends` for baseUrl/paths, the common monorepo layout.
    const parsed = parseJsonc(text);
    if ((!options.baseUrl && !options.paths) && isRecord(parsed) && typeof parsed.extends === 'string' && parsed.extends.startsWith('.')) {
      const parentPath = posix.normalize(posix.join(configDir, parsed.extends.endsWith('.json') ? parsed.extends : `${parsed.extends}.json`));
      const parent = contents.get(parentPath);
      if (parent) {
        options = compilerOptions(parent);
        configDir = posix.dirname(parentPath);
      }
    }
    if (!options.baseUrl && !options.paths) return;
    const config: PathsConfig = { dir: posix.dirname(path), paths: [] };
    const baseUrl = posix.normalize(posix.join(configDir, options.baseUrl ?? '.'));
    config.baseUrl = baseUrl;
    for (const [pattern, targets] of Object.entries(options.paths ?? {})) {
      config.paths.push({ pattern, targets: targets.map((target) => posix.join(baseUrl, target)) });
    }
    this.pathConfigs.set(config.dir, config);
  }

  /** Repo files `specifier` (imported from `from`) can load; empty for built-ins and external packages. */
  resolve(from: string, specifier: string): string[] {
    if (specifier.startsWith('.') || specifier.startsWith('/')) {
      const target = posix.normalize(posix.join(posix.dirname(from), specifier));
      return this.asFileOrDirectory(target);
    }
    if (specifier.startsWith('node:')) return [];
    if (specifier.startsWith('#')) return this.viaImportsField(from, specifier);
    const viaPaths = this.viaTsconfig(from, specifier);
    if (viaPaths.length > 0) return viaPaths;
    return this.viaWorkspacePackage(specifier);
  }

  private asFileOrDirectory(target: string): string[] {
    const clean = target.replace(/^\.\//, '');
    if (this.files.has(clean) && !/\.(js|jsx|mjs|cjs)$/.test(clean)) return [clean];
    // ESM TypeScript imports name the emitted file: './a.js' means './a.ts'.
    const stem = clean.replace(/\.(js|jsx|mjs|cjs)$/, '');
    for (const ext of RESOLVE_EXTENSIONS) {
      if (stem !== clean && this.files.has(stem + ext)) return [stem + ext];
    }
    if (this.files.has(clean)) return [clean];
    for (const ext of RESOLVE_EXTENSIONS) if (this.files.has(clean + ext)) return [clean + ext];
    const pkg = this.packagesByDir.get(clean);
    if (pkg?.main) {
      const main = this.asFileOrDirectory(posix.join(clean, pkg.main));
      if (main.length > 0) return main;
    }
    for (const ext of RESOLVE_EXTENSIONS) {
      const index = posix.join(clean, `index${ext}`);
      if (this.files.has(index)) return [index];
    }
    return [];
  }

  /** A built target (dist/x.js) that is not committed maps back to its source (src/x.ts). */
  private asSourceOf(target: string): string[] {
    const direct = this.asFileOrDirectory(target);
    if (direct.length > 0) return direct;
    const source = target.replace(/(^|\/)(dist|lib|build|out)\//, '$1src/').replace(/\.d\.ts$/, '.ts');
    return source === target ? [] : this.asFileOrDirectory(source);
  }

  private viaTsconfig(from: string, specifier: string): string[] {
    let dir = posix.dirname(from);
    for (;;) {
      const config = this.pathConfigs.get(dir);
      if (config) {
        for (const { pattern, targets } of config.paths) {
          const match = matchPattern(pattern, specifier);
          if (match === undefined) continue;
          const resolved = targets.flatMap((target) => this.asFileOrDirectory(target.replace('*', match)));
          if (resolved.length > 0) return resolved;
        }
        if (config.baseUrl !== undefined) {
          const resolved = this.asFileOrDirectory(posix.join(config.baseUrl, specifier));
          if (resolved.length > 0) return resolved;
        }
      }
      if (dir === '.' || dir === '') return [];
      dir = posix.dirname(dir);
    }
  }

  private viaWorkspacePackage(specifier: string): string[] {
    const parts = specifier.split('/');
    const nameLength = specifier.startsWith('@') ? 2 : 1;
    const name = parts.slice(0, nameLength).join('/');
    const pkg = this.packagesByName.get(name);
    if (!pkg) return [];
    const subpath = parts.length > nameLength ? `./${parts.slice(nameLength).join('/')}` : '.';
    if (pkg.exports !== undefined) {
      const targets = exportTargets(pkg.exports, subpath);
      const resolved = targets.flatMap((target) => this.asSourceOf(posix.join(pkg.dir, target)));
      if (resolved.length > 0) return [...new Set(resolved)];
    }
    if (subpath === '.') {
      if (pkg.main) {
        const main = this.asSourceOf(posix.join(pkg.dir, pkg.main));
        if (main.length > 0) return main;
      }
      return this.asSourceOf(posix.join(pkg.dir, 'index'));
    }
    return this.asSourceOf(posix.join(pkg.dir, subpath));
  }

  private viaImportsField(from: string, specifier: string): string[] {
    let dir = posix.dirname(from);
    for (;;) {
      const pkg = this.packagesByDir.get(dir);
      if (pkg?.imports !== undefined) {
        const targets = exportTargets(pkg.imports, specifier);
        return [...new Set(targets.flatMap((target) => this.asSourceOf(posix.join(pkg.dir, target))))];
      }
      if (dir === '.' || dir === '') return [];
      dir = posix.dirname(dir);
    }
  }
}

/**
 * Every file an `exports`/`imports` map can hand out for `subpath`, across all conditions: the
 * analysis cannot know which condition a test runner picks, so it keeps them all.
 */
export function exportTargets(map: unknown, subpath: string): string[] {
  if (typeof map === 'string') return subpath === '.' ? [map] : [];
  if (Array.isArray(map)) return map.flatMap((entry) => exportTargets(entry, subpath));
  if (!isRecord(map)) return [];
  const keys = Object.keys(map);
  const isSubpathMap = keys.some((key) => key.startsWith('.') || key.startsWith('#'));
  if (!isSubpathMap) return collectStrings(map);
  for (const key of keys) {
    const match = matchPattern(key, subpath);
    if (match === undefined) continue;
    return collectStrings(map[key]).map((target) => target.replace('*', match));
  }
  return [];
}

function collectStrings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(collectStrings);
  if (isRecord(value)) return Object.values(value).flatMap(collectStrings);
  return [];
}

/** `pattern` with at most one `*`; returns what the star matched ('' for an exact match). */
function matchPattern(pattern: string, value: string): string | undefined {
  const star = pattern.indexOf('*');
  if (star < 0) return pattern === value ? '' : undefined;
  const prefix = pattern.slice(0, star);
  const suffix = pattern.slice(star + 1);
  if (value.length < prefix.length + suffix.length) return undefined;
  if (!value.startsWith(prefix) || !value.endsWith(suffix)) return undefined;
  return value.slice(prefix.length, value.length - suffix.length);
}

function compilerOptions(text: string): { baseUrl?: string; paths?: Record<string, string[]> } {
  const parsed = parseJsonc(text);
  if (!isRecord(parsed) || !isRecord(parsed.compilerOptions)) return {};
  const options = parsed.compilerOptions;
  const result: { baseUrl?: string; paths?: Record<string, string[]> } = {};
  if (typeof options.baseUrl === 'string') result.baseUrl = options.baseUrl;
  if (isRecord(options.paths)) {
    const paths: Record<string, string[]> = {};
    for (const [key, value] of Object.entries(options.paths)) {
      if (Array.isArray(value)) paths[key] = value.filter((entry): entry is string => typeof entry === 'string');
    }
    result.paths = paths;
  }
  return result;
}

function parseJsonc(text: string): unknown {
  const result = typescript().parseConfigFileTextToJson('config.json', text);
  return result.error ? undefined : result.config;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Test files by the conventions of vitest, jest, mocha and node's test runner. */
export function isJsTestFile(path: string): boolean {
  if (!/\.(ts|tsx|mts|cts|js|jsx|mjs|cjs)$/.test(path) || path.endsWith('.d.ts')) return false;
  if (/(^|\/)node_modules\//.test(path)) return false;
  const base = posix.basename(path);
  if (/[.\-_](test|spec)\.[cm]?[jt]sx?$/.test(base) || /^test[.\-_]/.test(base) || /^test\.[cm]?[jt]s$/.test(base)) return true;
  if (!/(^|\/)(test|tests|__tests__)\//.test(path)) return false;
  // Helpers and fixtures live under test/ without being tests themselves.
  if (/(^|\/)(fixtures?|helpers?|support|utils|__fixtures__|__mocks__|data)\//.test(path)) return false;
  return !base.startsWith('_') && !/^(helpers?|setup|utils?|common)\./.test(base);
}

export interface JsParsed {
  specifiers: string[];
  /** Statements that run at import time, with function and class bodies left out. */
  topLevel: string[];
  /** A barrel: an index file or a module made of re-exports (a change to it reaches every importer). */
  hub: boolean;
  /** Per-declaration uses and exports, for selection by name (`js-symbols.ts`). */
  symbols: JsSymbols;
}

/** One full parse (TypeScript's parser, no type checking) for symbols and import-time code. */
export function parseJsModule(path: string, text: string): JsParsed {
  const specifiers = parseJsImports(text);
  const source = typescript().createSourceFile(path, text, typescript().ScriptTarget.Latest, true, scriptKind(path));
  const topLevel: string[] = [];
  let reexports = 0;
  for (const statement of source.statements) {
    if (typescript().isImportDeclaration(statement) || typescript().isImportEqualsDeclaration(statement)) {
      topLevel.push(statement.getText(source));
      continue;
    }
    if (typescript().isExportDeclaration(statement) && statement.moduleSpecifier) {
      reexports++;
      topLevel.push(statement.getText(source));
      continue;
    }
    topLevel.push(importTimeText(statement, source));
  }
  const hub = /^index\.[cm]?[jt]sx?$/.test(posix.basename(path)) || reexports >= 2;
  return { specifiers, topLevel, hub, symbols: parseJsSymbols(source) };
}

function scriptKind(path: string): ts.ScriptKind {
  if (/\.tsx$/.test(path)) return typescript().ScriptKind.TSX;
  if (/\.[cm]?ts$/.test(path)) return typescript().ScriptKind.TS;
  if (/\.jsx$/.test(path)) return typescript().ScriptKind.JSX;
  return typescript().ScriptKind.JS;
}

/** A statement as it matters at import time: function bodies and class member bodies dropped. */
function importTimeText(statement: ts.Statement, source: ts.SourceFile): string {
  if (typescript().isFunctionDeclaration(statement)) return `function ${statement.name?.text ?? ''}`;
  if (typescript().isClassDeclaration(statement)) {
    const heritage = statement.heritageClauses?.map((clause) => clause.getText(source)).join(' ') ?? '';
    const statics = statement.members
      .filter((member) => typescript().isPropertyDeclaration(member) && member.initializer)
      .map((member) => member.getText(source));
    return `class ${statement.name?.text ?? ''} ${heritage} ${statics.join(' ')}`;
  }
  if (typescript().isVariableStatement(statement)) {
    const parts = statement.declarationList.declarations.map((declaration) => {
      const init = declaration.initializer;
      if (init && (typescript().isArrowFunction(init) || typescript().isFunctionExpression(init))) return `${declaration.name.getText(source)} = function`;
      return declaration.getText(source);
    });
    return `var ${parts.join(', ')}`;
  }
  if (typescript().isInterfaceDeclaration(statement) || typescript().isTypeAliasDeclaration(statement)) return '';
  return statement.getText(source);
}
