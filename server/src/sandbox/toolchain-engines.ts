import type { EnvironmentRecipe } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { compareVersions, isExactVersion, majorOf, newestSatisfying, parseRange, satisfies } from './versions';

/*
 * A package manager refuses to start on a Node its `engines.node` excludes (pnpm 11 wants Node
 * >= 22.13), and the snapshot build found out only after fetching both toolchains (~224 s) with
 * "fix the install". The manager's own engines, from the registry's metadata for the chosen
 * version, are checked against the chosen Node before anything is fetched: within the range the
 * repository allows, the nearest Node that satisfies both is taken (the smallest newer one, else
 * the newest older one); an exact pin has no range, and then detection is refused naming both
 * versions, where each comes from, and the fix.
 */

/** A published version's `engines.node` on the npm registry (`npm view <name>@<version> engines`), or undefined when it has none. */
export type EnginesLookup = (packageName: string, version: string) => Promise<string | undefined>;

type Node = NonNullable<EnvironmentRecipe['node']>;
type Manager = NonNullable<EnvironmentRecipe['packageManager']>;

/** The range a Node spec allows (`22`, `>=18`, `lts/*` → its line), or undefined for an exact pin. */
export function nodeRangeOf(spec: string, resolved: string): string | undefined {
  const text = spec.trim().replace(/^v(?=\d)/, '');
  if (isExactVersion(text)) return undefined;
  if (/^(node|latest|current|stable)$/i.test(text)) return '*';
  if (/^lts/i.test(text)) return resolved.split('.')[0];
  return parseRange(text) ? text : undefined;
}

/**
 * The Node the recipe runs, fitted to the package manager's `engines.node`: unchanged when it
 * satisfies them (or the manager states none the range reader understands), else the nearest
 * published Node within `range` (the repository's) that does. Throws `bad_request` naming both
 * versions when none does.
 */
export async function fitNodeToManager(input: {
  node: Node;
  range: string | undefined;
  manager: Manager;
  /** The manager's registry package (`pnpm`, `@yarnpkg/cli-dist`). */
  managerPackage: string;
  /** Published Node versions. */
  published: readonly string[];
  engines: EnginesLookup;
}): Promise<Node> {
  const { node, range, manager } = input;
  const wanted = await input.engines(input.managerPackage, manager.version);
  if (wanted === undefined || parseRange(wanted) === undefined || satisfies(node.version, wanted)) return node;
  const fitting = range === undefined ? [] : input.published.filter((version) => isExactVersion(version) && satisfies(version, range) && satisfies(version, wanted)).sort(compareVersions);
  const nearest = fitting.find((version) => compareVersions(version, node.version) > 0) ?? fitting.at(-1);
  if (nearest) return { version: nearest, source: `${node.source} (${node.version} → ${nearest}: ${manager.name} ${manager.version} needs Node ${wanted})` };
  // The pin's own line first: 22.9.0 with pnpm 11 suggests the newest 22.x, not a new major.
  const suggestion = newestSatisfying(input.published.filter((version) => majorOf(version) === majorOf(node.version)), wanted) ?? newestSatisfying(input.published, wanted);
  const asked = range === undefined ? `pins Node ${node.version}` : `allows "${range}" (chosen: ${node.version}) and no published Node in it satisfies both`;
  throw new DockhandError(
    'bad_request',
    `${node.source}: ${manager.name} ${manager.version} (${manager.source}) needs Node ${wanted} (its engines.node on the registry), but ${node.source} ${asked}`,
    {
      field: node.source,
      hint:
        `name a Node that satisfies ${wanted} in ${node.source}${suggestion ? ` (e.g. ${suggestion})` : ''}, or a ${manager.name} that runs on Node ${node.version} in ${manager.source}; ` +
        'node: in .dockhand/environment.yml overrides the Node without changing the repository\'s files',
    },
  );
}

/**
 * `engines.node` from `npm view <name>@<version> engines --json`: an object (`{ "node": ">=22.13" }`),
 * nothing at all for a version without engines, or an old package's list of strings
 * (`["node >=0.6"]`), which is read for its node entry.
 */
export function nodeEnginesOf(stdout: string): string | undefined {
  if (stdout.trim() === '') return undefined;
  const parsed: unknown = JSON.parse(stdout);
  if (Array.isArray(parsed)) {
    const entry = parsed.find((item): item is string => typeof item === 'string' && /^node\s/.test(item));
    return entry?.replace(/^node\s+/, '').trim();
  }
  if (typeof parsed === 'object' && parsed !== null && 'node' in parsed && typeof parsed.node === 'string') return parsed.node;
  return undefined;
}
