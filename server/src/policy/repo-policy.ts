import { formatFieldPath } from '@dockhand/protocol';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { z } from 'zod';
import { DockhandError } from '../errors';
import { hasOwnPrices, unpricedModelMessage } from '../model/pricing';

/**
 * The per-repo policy file, `.dockhand/policy.yml`, read at the task's base SHA (never from the
 * agent's working tree: the agent cannot loosen its own rules, and `.dockhand/**` is protected).
 * Every field is optional; a repo without the file gets the defaults below.
 *
 * ```yaml
 * protectedPaths: ["db/migrations/**", "**\/Dockerfile"]
 * maxChangedLines: 400
 * maxChangedFiles: 20
 * requiredApprovals: 2
 * allowedEgressHosts: ["registry.npmjs.org"]
 * model: claude-sonnet-4-5
 * routineModel: claude-haiku-4-5                 # routine tasks (--priority routine) of this repo
 * testCommand: npm test --silent
 * owners: ["alice", "bob"]
 * supplyChain: { newDependencies: allow }   # installScripts, dependencySources, registryConfig: override
 * ```
 */

export const POLICY_FILE_PATH = '.dockhand/policy.yml';

const RepoGlob = z
  .string()
  .min(1)
  .max(500)
  .refine((glob) => !glob.startsWith('/') && !glob.split('/').includes('..'), {
    message: 'must be a repo-relative glob (no leading "/", no "..")',
  });

const Hostname = z
  .string()
  .regex(/^(?:\*\.)?[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*(?::\d{1,5})?$/i, {
    message: 'must be a host name such as "registry.npmjs.org" or "*.example.com" (no scheme, no path)',
  });

const SupplyChainDecision = z.enum(['allow', 'override']);

/** What a supply-chain change needs (`supply-chain.ts`): `override` (default) or `allow`. */
export const SupplyChainPolicy = z.strictObject({
  installScripts: SupplyChainDecision.default('override'),
  dependencySources: SupplyChainDecision.default('override'),
  registryConfig: SupplyChainDecision.default('override'),
  newDependencies: SupplyChainDecision.default('override'),
});

export const DEFAULT_MAX_CHANGED_LINES = 800;
export const DEFAULT_MAX_CHANGED_FILES = 40;

export const RepoPolicy = z.strictObject({
  version: z.literal(1).default(1),
  /** Globs added to the built-in protected paths (they never replace them). */
  protectedPaths: z.array(RepoGlob).max(500).default([]),
  /** Added plus removed lines, lockfiles excluded. */
  maxChangedLines: z.number().int().min(1).max(1_000_000).default(DEFAULT_MAX_CHANGED_LINES),
  maxChangedFiles: z.number().int().min(1).max(100_000).default(DEFAULT_MAX_CHANGED_FILES),
  /** Distinct human approvals needed before the server pushes. */
  requiredApprovals: z.number().int().min(1).max(10).default(1),
  /** Hosts the snapshot build may reach (the package mirror); nothing else gets egress. */
  allowedEgressHosts: z.array(Hostname).max(100).default([]),
  model: z.string().min(1).max(200).optional(),
  /**
   * The model for this repository's routine tasks (dependency bumps, lint fixes); wins over the
   * fleet's `model.routine`. Must have prices (model/pricing.ts) so its cost is its own.
   */
  routineModel: z
    .string()
    .min(1)
    .max(200)
    .refine((model) => hasOwnPrices(model), { error: (issue) => unpricedModelMessage(String(issue.input)) })
    .optional(),
  /** Replaces the detected test command for the whole suite. */
  testCommand: z.string().min(1).max(2000).optional(),
  /** Users who may override a policy violation for this repo. */
  owners: z.array(z.string().min(1).max(200)).max(200).default([]),
  /** Supply-chain changes: each kind needs an owner's override unless set to `allow`. */
  supplyChain: SupplyChainPolicy.default(SupplyChainPolicy.parse({})),
});
export type RepoPolicy = z.infer<typeof RepoPolicy>;

export const DEFAULT_REPO_POLICY: RepoPolicy = RepoPolicy.parse({});

function issueField(issue: z.core.$ZodIssue): string {
  const path: PropertyKey[] = [...issue.path];
  if (issue.code === 'unrecognized_keys' && issue.keys.length > 0) path.push(issue.keys[0]!);
  return formatFieldPath(path);
}

function issueMessage(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') {
    return `unknown field; allowed fields are ${Object.keys(RepoPolicy.shape).join(', ')}`;
  }
  return issue.message;
}

/**
 * Parses the text of `.dockhand/policy.yml` (undefined or empty: the defaults). Errors are
 * `bad_request` naming the file and the field, e.g. `.dockhand/policy.yml: maxChangedLines: …`.
 */
export function parseRepoPolicy(text: string | undefined): RepoPolicy {
  if (text === undefined || text.trim() === '') return DEFAULT_REPO_POLICY;
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    const where = error instanceof YAMLParseError && error.linePos ? ` (line ${error.linePos[0].line})` : '';
    throw new DockhandError('bad_request', `${POLICY_FILE_PATH}: not valid YAML${where}`, {
      field: POLICY_FILE_PATH,
      hint: 'fix the YAML syntax of the policy file',
      cause: error,
    });
  }
  if (raw === null || raw === undefined) return DEFAULT_REPO_POLICY;
  const result = RepoPolicy.safeParse(raw);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const field = issueField(issue);
    return field ? `${field}: ${issueMessage(issue)}` : issueMessage(issue);
  });
  const first = result.error.issues[0];
  const field = first ? issueField(first) : '';
  return failWith(problems, field);
}

function failWith(problems: string[], field: string): never {
  throw new DockhandError('bad_request', `${POLICY_FILE_PATH}: ${problems.join('; ')}`, {
    field: field || POLICY_FILE_PATH,
    hint: `fix the named field in ${POLICY_FILE_PATH} at the base commit`,
  });
}
