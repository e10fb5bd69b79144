import type { JsSymbols, JsUses } from './js-symbols';

/*
 * The symbol graph of the JS/TS files: which top-level bindings a piece of code can reach, with
 * re-exports followed name by name. Nodes per file:
 *   `l:<name>`  a top-level binding (declaration or import binding),
 *   `e:<name>`  an exported name,
 *   `<init>`    the code that runs when the file is loaded,
 *   `*`         the whole file (every binding, every export, its init, its `export *` sources).
 * Edges go from a user to what it uses: a declaration to the bindings it references, an import
 * binding to the exported name it imports, an exported name to its local binding or to the name
 * it re-exports, `ns.member` straight to the member. Wherever the analysis cannot tell a name
 * apart — a namespace used as a value, `require`, `import()`, a side-effect import, a CommonJS
 * module, a name no `export` lists — the edge goes to the whole file.
 */

type Resolve = (from: string, specifier: string) => string[];

const WHOLE = '*';
const INIT = '<init>';

export class JsSymbolGraph {
  private readonly reversed = new Map<string, string[]>();
  private readonly exportsName = new Map<string, boolean>();
  private readonly starNames = new Set<string>();

  constructor(
    private readonly symbols: Map<string, JsSymbols>,
    private readonly resolve: Resolve,
  ) {
    for (const [file, record] of symbols) this.addFile(file, record);
  }

  /**
   * Files that depend on the given bindings of `file`: `whole` holds the files all of whose code
   * reaches them (tests are selected from here), `init` the files whose load-time code does
   * (every test that loads one of those is affected).
   */
  dependents(file: string, names: string[]): { whole: Set<string>; init: Set<string> } {
    const start = [node(file, WHOLE), ...names.map((name) => node(file, `l:${name}`))];
    const seen = new Set(start);
    const queue = [...start];
    while (queue.length > 0) {
      const current = queue.pop() ?? '';
      for (const next of this.reversed.get(current) ?? []) {
        if (seen.has(next)) continue;
        seen.add(next);
        queue.push(next);
      }
    }
    const whole = new Set<string>();
    const init = new Set<string>();
    for (const id of seen) {
      const [owner = '', kind] = id.split('\0');
      if (kind === WHOLE) whole.add(owner);
      else if (kind === INIT) init.add(owner);
    }
    return { whole, init };
  }

  private edge(from: string, to: string): void {
    const list = this.reversed.get(to);
    if (list) list.push(from);
    else this.reversed.set(to, [from]);
  }

  private addFile(file: string, record: JsSymbols): void {
    const whole = node(file, WHOLE);
    const bySpecifier = new Map<string, string[]>();
    const targets = (specifier: string): string[] => {
      let resolved = bySpecifier.get(specifier);
      if (!resolved) bySpecifier.set(specifier, (resolved = this.resolve(file, specifier)));
      return resolved;
    };
    const importOf = new Map(record.imports.map((entry) => [entry.local, entry]));
    const addUses = (from: string, uses: JsUses): void => {
      for (const ref of uses.refs) this.edge(from, node(file, `l:${ref}`));
      for (const [local = '', member = '', inner] of uses.members) {
        const entry = importOf.get(local);
        if (!entry) continue;
        for (const target of targets(entry.specifier)) {
          const namespace = entry.imported === WHOLE ? target : this.namespaceBehind(target, entry.imported, 0);
          const nested = namespace !== undefined && inner !== undefined ? this.namespaceBehind(namespace, member, 0) : undefined;
          if (namespace === undefined) this.edge(from, node(file, `l:${local}`));
          else if (nested !== undefined && inner !== undefined) this.edge(from, this.exportNode(nested, inner));
          else this.edge(from, this.exportNode(namespace, member));
        }
      }
      for (const specifier of uses.modules) for (const target of targets(specifier)) this.edge(from, node(target, WHOLE));
    };

    this.edge(whole, node(file, INIT));
    addUses(node(file, INIT), record.init);
    for (const declaration of record.declarations) {
      const local = node(file, `l:${declaration.name}`);
      this.edge(whole, local);
      addUses(local, declaration.uses);
    }
    // Import bindings are not part of `*`: a file reaches what it imports only by using it.
    for (const entry of record.imports) {
      const local = node(file, `l:${entry.local}`);
      for (const target of targets(entry.specifier)) {
        this.edge(local, entry.imported === WHOLE ? node(target, WHOLE) : this.exportNode(target, entry.imported));
      }
    }
    for (const entry of record.exports) {
      const exported = node(file, `e:${entry.exported}`);
      this.edge(whole, exported);
      if (entry.local !== undefined) this.edge(exported, node(file, `l:${entry.local}`));
      else if (entry.specifier !== undefined) {
        for (const target of targets(entry.specifier)) {
          this.edge(exported, entry.imported === WHOLE ? node(target, WHOLE) : this.exportNode(target, entry.imported ?? entry.exported));
        }
      }
    }
    for (const specifier of record.stars) for (const target of targets(specifier)) this.edge(whole, node(target, WHOLE));
  }

  /**
   * The node for `name` as exported by `file`: its own export, else every `export *` source that
   * has it, else (CommonJS, not a JS file, a name nobody lists) the whole file.
   */
  private exportNode(file: string, name: string): string {
    const record = this.symbols.get(file);
    if (!record || record.opaque) return node(file, WHOLE);
    if (record.exports.some((entry) => entry.exported === name)) return node(file, `e:${name}`);
    if (name === 'default') return node(file, WHOLE);
    const via = record.stars.flatMap((specifier) => this.resolve(file, specifier)).filter((target) => this.hasExport(target, name, new Set()));
    if (via.length === 0) return node(file, WHOLE);
    // A name that arrives through `export *` gets its own node here, pointing at each source.
    const id = node(file, `e:${name}`);
    if (!this.starNames.has(id)) {
      this.starNames.add(id);
      for (const target of via) this.edge(id, this.exportNode(target, name));
    }
    return id;
  }

  /**
   * The module whose namespace `file` exports as `name` (`export * as name from`, or an imported
   * `* as` binding exported again), when it is exactly one; undefined for anything else.
   */
  private namespaceBehind(file: string, name: string, depth: number): string | undefined {
    const record = this.symbols.get(file);
    if (!record || record.opaque || depth > 8) return undefined;
    const exported = record.exports.find((entry) => entry.exported === name);
    if (!exported) {
      if (name === 'default') return undefined;
      const via = record.stars.flatMap((specifier) => this.resolve(file, specifier)).filter((target) => this.hasExport(target, name, new Set()));
      return via.length === 1 && via[0] !== undefined ? this.namespaceBehind(via[0], name, depth + 1) : undefined;
    }
    let specifier = exported.specifier;
    let imported = exported.imported;
    if (exported.local !== undefined) {
      const binding = record.imports.find((entry) => entry.local === exported.local);
      specifier = binding?.specifier;
      imported = binding?.imported;
    }
    if (specifier === undefined || imported === undefined) return undefined;
    const targets = this.resolve(file, specifier);
    if (targets.length !== 1 || targets[0] === undefined) return undefined;
    return imported === WHOLE ? targets[0] : this.namespaceBehind(targets[0], imported, depth + 1);
  }

  private hasExport(file: string, name: string, visiting: Set<string>): boolean {
    const key = `${file}\0${name}`;
    const known = this.exportsName.get(key);
    if (known !== undefined) return known;
    if (visiting.has(file)) return false;
    visiting.add(file);
    const record = this.symbols.get(file);
    const found =
      !record || record.opaque || record.exports.some((entry) => entry.exported === name) ||
      record.stars.some((specifier) => this.resolve(file, specifier).some((target) => this.hasExport(target, name, visiting)));
    visiting.delete(file);
    if (visiting.size === 0) this.exportsName.set(key, found);
    return found;
  }
}

function node(file: string, kind: string): string {
  return `${file}\0${kind}`;
}
