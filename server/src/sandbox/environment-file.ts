import { formatFieldPath } from '@dockhand/protocol';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { z } from 'zod';
import { DockhandError } from '../errors';

/**
 * `.dockhand/environment.yml`: the one file a repository uses to override the detected
 * environment recipe (see README.md in this folder). Every field is optional.
 *
 * ```yaml
 * node: 22                      # a version or range: 22, "20.11.1", ">=20"
 * packageManager: pnpm@9.15.9   # npm | pnpm | yarn (classic) | yarn@4… (berry), with or without a version
 * install: pnpm install --frozen-lockfile
 * test: pnpm vitest run
 * prePr: pnpm lint && pnpm test
 * python: { requirements: [requirements-dev.txt] }   # or false: no Python install
 * egressHosts: [binaries.prisma.sh]                   # hosts the install may reach besides the registries
 * skipScripts: [puppeteer]                            # packages whose lifecycle scripts do not run
 * lifecycleScripts: true                              # false: no lifecycle script runs at all
 * setup: after                                        # .dockhand/setup.sh after the install, or `replace` it
 * registries: [{ scope: "@acme", url: "https://npm.acme.internal/", token: NPM_ACME }]   # no scope: the default registry
 * pythonIndex: { url: "https://pypi.acme.internal/simple/", username: ci, token: PYPI_ACME }   # pip's index, through the server's front
 * secrets: [SENTRY_AUTH]                              # given to setup.sh only, as $SENTRY_AUTH_FILE
 * ```
 */
export const ENVIRONMENT_FILE_PATH = '.dockhand/environment.yml';

const Command = z.string().trim().min(1, 'must be a non-empty shell command').max(4000);
const Host = z
  .string()
  .regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/i, 'must be a host name such as "binaries.example.com" (no scheme, port or path)')
  // The build proxy tunnels only to names it resolves and checks itself (egress-proxy.ts).
  .refine((host) => !/^[\d.]+$/.test(host), 'must be a host name, not an IP address (the build proxy refuses IP literals)');
const PackageName = z.string().regex(/^(?:@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*$/i, 'must be an npm package name such as "puppeteer" or "@scope/name"');

/** A registry with the repository secret that authenticates it (`dockhand secret set <repo> NPM_ACME`). */
const Registry = z.strictObject({
  scope: z.string().regex(/^@[a-z0-9][a-z0-9._-]*$/, 'must be an npm scope such as "@acme"').optional(),
  url: z.string().url('must be the registry\'s URL, e.g. https://npm.acme.internal/'),
  token: z.string().regex(/^[A-Z][A-Z0-9_]{0,63}$/, 'must name a repository secret such as NPM_ACME (A-Z 0-9 _)'),
});
const Registries = z
  .array(Registry)
  .max(20)
  .refine((list) => new Set(list.map((registry) => registry.scope ?? '')).size === list.length, 'each scope (and the default registry, without one) may be named once');

/**
 * A Python package index with the repository secret that authenticates it: HTTP Basic with
 * `username` (default `__token__`, PyPI's and many hosted indexes' name for a token) and the
 * secret as the password. pip gets the server's front as its index, never this URL.
 */
const PythonIndex = z.strictObject({
  url: z.string().url('must be the index\'s simple URL, e.g. https://pypi.acme.internal/simple/'),
  username: z.string().regex(/^[^:\s]{1,200}$/, 'must be the index\'s user name (no colon or space)').optional(),
  token: z.string().regex(/^[A-Z][A-Z0-9_]{0,63}$/, 'must name a repository secret such as PYPI_ACME (A-Z 0-9 _)'),
});

export const EnvironmentFile = z.strictObject({
  node: z.union([z.string().trim().min(1).max(100), z.number().positive()]).transform(String).optional(),
  packageManager: z
    .string()
    .regex(/^(npm|pnpm|yarn)(@\d+(\.\d+){0,2}([+-][\w.+-]*)?)?$/, 'must be npm, pnpm or yarn, optionally with a version such as "pnpm@9.15.9"')
    .optional(),
  install: Command.optional(),
  test: Command.optional(),
  prePr: Command.optional(),
  python: z.union([z.literal(false), z.strictObject({ requirements: z.array(z.string().min(1).max(500)).max(50).optional() })]).optional(),
  egressHosts: z.array(Host).max(100).default([]),
  skipScripts: z.array(PackageName).max(500).default([]),
  lifecycleScripts: z.boolean().default(true),
  setup: z.enum(['after', 'replace']).optional(),
  registries: Registries.optional(),
  pythonIndex: PythonIndex.optional(),
  /** Repository secrets given to `.dockhand/setup.sh` only, as files (`setup-secrets.ts`). */
  secrets: z.array(z.string().regex(/^[A-Z][A-Z0-9_]{0,63}$/, 'must name a repository secret such as SENTRY_AUTH (A-Z 0-9 _)')).max(20).optional(),
});
export type EnvironmentFile = z.infer<typeof EnvironmentFile>;

/** Parses the file's text; errors are `bad_request` naming the file and the field. */
export function parseEnvironmentFile(text: string | undefined): EnvironmentFile | undefined {
  if (text === undefined) return undefined;
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    const where = error instanceof YAMLParseError && error.linePos ? ` (line ${error.linePos[0].line})` : '';
    throw new DockhandError('bad_request', `${ENVIRONMENT_FILE_PATH}: not valid YAML${where}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`, {
      field: ENVIRONMENT_FILE_PATH,
    });
  }
  if (raw === null || raw === undefined) return EnvironmentFile.parse({});
  const parsed = EnvironmentFile.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const path: PropertyKey[] = [...(issue?.path ?? [])];
  if (issue?.code === 'unrecognized_keys' && issue.keys[0] !== undefined) path.push(issue.keys[0]);
  const field = formatFieldPath(path) || '(top level)';
  const message =
    issue?.code === 'unrecognized_keys' ? `unknown field; allowed fields are ${Object.keys(EnvironmentFile.shape).join(', ')}` : (issue?.message ?? 'invalid');
  throw new DockhandError('bad_request', `${ENVIRONMENT_FILE_PATH}: field "${field}": ${message}`, { field: `${ENVIRONMENT_FILE_PATH}:${field}` });
}
