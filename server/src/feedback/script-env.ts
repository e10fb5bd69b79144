import type { PackageManagerName } from '@dockhand/protocol';
import { z } from 'zod';
import { shellQuote } from './runners';

/*
 * The environment a package manager gives a script it runs. The engine runs the steps of
 * `npm test` (pretest, test, posttest, and the scripts they call) itself, one by one, so that it
 * can instrument the runner step; without this a step would miss what npm would have set, and a
 * tool that checks it refuses to run (template-oss-check: "This package requires npm >7.21.1",
 * for want of `npm_config_local_prefix`; FINDINGS F19).
 *
 * What each manager sets, from its own source:
 * - npm 7+ (@npmcli/run-script, @npmcli/config's set-envs): PATH with `node_modules/.bin` of the
 *   package's directory and of every parent; npm_lifecycle_event, npm_lifecycle_script,
 *   npm_package_json, npm_package_{name,version,config_*,engines_*,bin_*} (npm RFC 21);
 *   npm_config_local_prefix, npm_config_global_prefix, npm_config_user_agent, npm_execpath,
 *   npm_node_execpath, NODE, INIT_CWD, npm_command.
 * - pnpm: the same PATH, lifecycle names, npm_package_json, npm_package_{name,version}, its user
 *   agent, INIT_CWD and PNPM_SCRIPT_SRC_DIR; no npm_config_local_prefix.
 * - yarn classic: the lifecycle and package names (it flattens every package.json field; the
 *   ones npm gives are given), its user agent, INIT_CWD, npm_execpath, npm_node_execpath, NODE.
 * - yarn berry: npm_lifecycle_event, npm_package_{name,version,json}, its user agent, INIT_CWD,
 *   PROJECT_CWD, npm_execpath, npm_node_execpath.
 *
 * Not given: npm_config_* for every non-default setting (the sandbox has no user npmrc; the
 * managers' defaults apply), npm's node-gyp-bin PATH entry, yarn berry's temporary bin folder
 * (its node_modules linker's .bin stands in), and every other package.json field that yarn
 * classic flattens into npm_package_*. Every manager's PATH here walks node_modules/.bin up from
 * the package's directory.
 *
 * Paths are the sandbox's, found when the step runs: the package directory is the step's `$PWD`,
 * the project root is `$PWD` less the member's directory, and node and the manager are the ones
 * on the sandbox's PATH (bash's command hash, no process started). Versions come from the
 * environment recipe (the toolchains the sandbox mounts); one it does not name is `?`, as yarn
 * and pnpm write npm's.
 */

export type ScriptManager = 'npm' | 'pnpm' | 'yarn';

/**
 * Yarn berry's Plug'n'Play has no node_modules/.bin: berry runs a script's binaries from its own
 * temporary bin folder. A step of a berry script that names a binary bash cannot find (`vitest
 * run`) therefore goes through `yarn exec`, as berry would run it (its shell appends the
 * arguments; NODE_OPTIONS keeps the side channel's preload after berry's `.pnp.cjs`). Only where
 * the project has `.pnp.cjs`, never for `yarn` itself; anything else stays bash's "command not
 * found" (exit 127).
 */
const PNP_BINARIES =
  'command_not_found_handle() { if [ "$1" != yarn ] && [ -z "$DOCKHAND_YARN_EXEC" ] && [ -f "${PROJECT_CWD:-$PWD}/.pnp.cjs" ]; then DOCKHAND_YARN_EXEC=1 yarn exec "$@"; return; fi; ' +
  'printf \'bash: %s: command not found\\n\' "$1" >&2; return 127; }; ';

/** The package-manager script a step of the test command was written in. */
export interface ScriptOrigin {
  manager: ScriptManager;
  /** The lifecycle event: the script's name (`test`, `posttest`, `lint`). */
  event: string;
  /** The script as npm runs it: its text, and the arguments passed to it (`npm test -- -x`). */
  script: string;
  /** npm's command that ran it: `test` for `npm test` and its pre/post scripts, `run-script` for `npm run x`. */
  command: 'test' | 'run-script';
}

/** What the recipe says the sandbox runs scripts with. */
export interface ScriptToolchain {
  /** Node's version, without the `v`. */
  node?: string;
  packageManager?: { name: PackageManagerName; version: string };
}

/** Where a step runs: the package's directory relative to the repository root ('' for the root), and whether through a workspace run. */
export interface ScriptPlace {
  dir: string;
  workspaces: boolean;
}

const PackageFields = z.object({
  name: z.string().optional(),
  version: z.string().optional(),
  config: z.unknown().optional(),
  engines: z.unknown().optional(),
  bin: z.unknown().optional(),
});

/** npm's package-envs: the package.json fields npm 7+ puts in a script's environment, flattened. */
export function packageEnvironment(packageJson: string | undefined): Record<string, string> {
  let parsed: z.infer<typeof PackageFields> = {};
  try {
    const result = PackageFields.safeParse(JSON.parse(packageJson ?? '{}'));
    if (result.success) parsed = result.data;
  } catch {
    // Not JSON: no package fields.
  }
  const env: Record<string, string> = {};
  const put = (key: string, value: unknown): void => {
    if (value === undefined) return;
    if (value === null || value === false) env[key] = '';
    else if (Array.isArray(value)) value.forEach((item, index) => put(`${key}_${index}`, item));
    else if (typeof value === 'object') for (const [inner, item] of Object.entries(value)) put(`${key}_${inner}`, item);
    else env[key] = String(value);
  };
  for (const [key, value] of Object.entries(parsed)) put(`npm_package_${key}`, value);
  return env;
}

/** The manager as the toolchain names it: `yarn` is berry when the recipe says so. */
function flavour(manager: ScriptManager, toolchain: ScriptToolchain): PackageManagerName {
  return manager === 'yarn' && toolchain.packageManager?.name === 'yarn-berry' ? 'yarn-berry' : manager;
}

function versionOf(name: PackageManagerName, toolchain: ScriptToolchain): string {
  return toolchain.packageManager?.name === name ? toolchain.packageManager.version : '?';
}

/** `npm/10.9.2 node/v22.11.0 linux x64 workspaces/false`, and pnpm's and yarn's `pnpm/9.1.0 npm/? node/v22.11.0 linux x64`. */
export function userAgent(manager: ScriptManager, toolchain: ScriptToolchain, workspaces: boolean): string {
  const name = flavour(manager, toolchain);
  const node = `node/${toolchain.node ? `v${toolchain.node}` : '?'} ${process.platform} ${process.arch}`;
  if (name === 'npm') return `npm/${versionOf('npm', toolchain)} ${node} workspaces/${workspaces}`;
  return `${manager}/${versionOf(name, toolchain)} npm/? ${node}`;
}

/**
 * Shell that sets a step's script environment, to run before the step in the same `bash -c`.
 * Without an origin (a command written outside any script) only the package's
 * `node_modules/.bin` goes on PATH, as before.
 */
export function scriptEnvironmentShell(origin: ScriptOrigin | undefined, packageEnv: Record<string, string>, toolchain: ScriptToolchain, place: ScriptPlace): string {
  if (!origin) return 'export PATH="$PWD/node_modules/.bin:$PATH"; ';
  const name = flavour(origin.manager, toolchain);
  const command = name === 'yarn-berry' ? 'yarn' : name;
  // The manager and node the sandbox's PATH finds, looked up before node_modules/.bin joins it (a package's own `npm` bin is not the one running the script).
  const lookup = `hash node 2>/dev/null; hash ${command} 2>/dev/null; `;
  const root = place.dir === '' ? '$PWD' : `\${PWD%${shellQuote(`/${place.dir}`)}}`;
  const walk = 'dockhand_dir=$PWD; dockhand_bins=; while [ -n "$dockhand_dir" ]; do dockhand_bins="$dockhand_bins$dockhand_dir/node_modules/.bin:"; dockhand_dir=${dockhand_dir%/*}; done; ' +
    'export PATH="$dockhand_bins/node_modules/.bin:$PATH"; unset dockhand_dir dockhand_bins; ';
  const fixed: Record<string, string> = { npm_lifecycle_event: origin.event, npm_config_user_agent: userAgent(origin.manager, toolchain, place.workspaces) };
  if (name !== 'yarn-berry') fixed.npm_lifecycle_script = origin.script;
  if (name === 'npm') fixed.npm_command = origin.command;
  Object.assign(fixed, name === 'npm' || name === 'yarn' ? packageEnv : Object.fromEntries(Object.entries(packageEnv).filter(([key]) => key === 'npm_package_name' || key === 'npm_package_version')));
  const paths: Record<string, string> = {
    npm_execpath: `"\${BASH_CMDS[${command}]}"`,
    npm_node_execpath: '"${BASH_CMDS[node]}"',
    NODE: '"${BASH_CMDS[node]}"',
    INIT_CWD: `"${root}"`,
  };
  if (name !== 'yarn') paths.npm_package_json = '"$PWD/package.json"';
  if (name === 'npm') paths.npm_config_local_prefix = `"${root}"`;
  if (name === 'pnpm') paths.PNPM_SCRIPT_SRC_DIR = '"$PWD"';
  if (name === 'yarn-berry') paths.PROJECT_CWD = `"${root}"`;
  const exports = [...Object.entries(paths).map(([key, value]) => `${key}=${value}`), ...Object.entries(fixed).map(([key, value]) => `${key}=${shellQuote(value)}`)];
  // npm's global prefix is two levels above the node binary (/usr/bin/node → /usr), once NODE is set.
  const globalPrefix = name === 'npm' ? 'export npm_config_global_prefix="${NODE%/*/*}"; ' : '';
  // Exported before PATH changes: setting PATH empties bash's command hash.
  return `${lookup}export ${exports.join(' ')}; ${globalPrefix}${walk}${name === 'yarn-berry' ? PNP_BINARIES : ''}`;
}
