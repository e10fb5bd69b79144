import { parse as parseYaml } from 'yaml';

/*
 * The Node versions a repository's GitHub Actions workflows test on: each `actions/setup-node`
 * step's `node-version`, with `${{ matrix.<key> }}` expanded from the job's `strategy.matrix`
 * (its list and its `include` entries) and `${{ env.<key> }}` from the job's or the workflow's
 * `env`. Pure: the caller passes the workflow texts it read.
 *
 * What it does not do: evaluate other expressions (`fromJSON(...)`, `inputs.*`, `vars.*`: such
 * a value is left out), follow `node-version-file` (the .nvmrc / .node-version it names is read
 * anyway, before the workflows), apply `matrix.exclude`, or read workflows in subdirectories of
 * `.github/workflows` (GitHub runs none from there either).
 */

/** Where GitHub Actions reads workflows: every `*.yml` / `*.yaml` directly in it. */
export const WORKFLOW_DIR = '.github/workflows';
/** At most this many workflow files are read (a repository with hundreds reads the first, by name). */
export const MAX_WORKFLOW_FILES = 64;

/** Is `path` a workflow GitHub would run (a YAML file directly in WORKFLOW_DIR)? */
export function isWorkflowFile(path: string): boolean {
  return path.startsWith(`${WORKFLOW_DIR}/`) && !path.slice(WORKFLOW_DIR.length + 1).includes('/') && /\.ya?ml$/i.test(path);
}

/** The workflow files among `paths`, sorted by name and capped at MAX_WORKFLOW_FILES. */
export function workflowFiles(paths: readonly string[]): string[] {
  return [...new Set(paths.filter(isWorkflowFile))].sort().slice(0, MAX_WORKFLOW_FILES);
}

export interface WorkflowNodeVersions {
  /** The workflow file that named them. */
  file: string;
  /** The job's id. */
  job: string;
  /** The versions as written (`18`, `'20.x'`, `lts/*`), in the file's order. */
  specs: string[];
  /** Where they came from: `matrix.nodejs`, `env.NODE` or `node-version`. */
  via: string;
  /** The job runs the tests (a step's `run` or name, or the job's id or name, says "test"). */
  runsTests: boolean;
}

type Mapping = Record<string, unknown>;

function isMapping(value: unknown): value is Mapping {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function scalars(value: unknown): string[] {
  const list = Array.isArray(value) ? value : [value];
  return list.filter((item) => typeof item === 'string' || typeof item === 'number').map((item) => String(item).trim()).filter((item) => item !== '');
}

const EXPRESSION = /^\$\{\{\s*(matrix|env)\.([\w-]+)\s*\}\}$/;

/** A setup-node `node-version` as the specs it stands for, or undefined when it cannot be known. */
function expand(value: unknown, matrix: Mapping | undefined, env: Mapping): { specs: string[]; via: string } | undefined {
  const written = scalars(value).flatMap((item) => item.split('\n').map((line) => line.trim()).filter(Boolean));
  if (written.length === 0) return undefined;
  const specs: string[] = [];
  let via = 'node-version';
  for (const item of written) {
    const expression = EXPRESSION.exec(item);
    if (!expression) {
      if (item.includes('${{')) return undefined;
      specs.push(item);
      continue;
    }
    const [, scope, key] = expression;
    if (!key) return undefined;
    if (scope === 'env') {
      const named = scalars(env[key]).filter((spec) => !spec.includes('${{'));
      if (named.length === 0) return undefined;
      specs.push(...named);
      via = `env.${key}`;
      continue;
    }
    const listed = scalars(matrix?.[key]);
    const included = Array.isArray(matrix?.include) ? matrix.include.flatMap((entry) => (isMapping(entry) ? scalars(entry[key]) : [])) : [];
    const named = [...listed, ...included].filter((spec) => !spec.includes('${{'));
    if (named.length === 0) return undefined;
    specs.push(...named);
    via = `matrix.${key}`;
  }
  return { specs: [...new Set(specs)], via };
}

/** "test", "tests", `test:unit`, or a test runner by name (`pnpm vitest --coverage`, `npx jest`, `tap`). */
const TEST_WORDS = /\b(?:tests?|vitest|jest|mocha|ava|tape|tap|uvu|c8|nyc)\b/i;

function mentionsTest(value: unknown): boolean {
  return typeof value === 'string' && TEST_WORDS.test(value);
}

/** Every job's setup-node versions, per workflow file among `files` (files by name, jobs in their order). */
export function workflowNodeVersions(files: Readonly<Record<string, string | undefined>>): WorkflowNodeVersions[] {
  const found: WorkflowNodeVersions[] = [];
  for (const file of workflowFiles(Object.keys(files))) {
    const text = files[file];
    if (text === undefined) continue;
    let workflow: unknown;
    try {
      workflow = parseYaml(text);
    } catch {
      continue; // GitHub would refuse the workflow too; it says nothing about the Node it runs.
    }
    if (!isMapping(workflow) || !isMapping(workflow.jobs)) continue;
    const workflowEnv = isMapping(workflow.env) ? workflow.env : {};
    for (const [job, definition] of Object.entries(workflow.jobs)) {
      if (!isMapping(definition) || !Array.isArray(definition.steps)) continue;
      const matrix = isMapping(definition.strategy) && isMapping(definition.strategy.matrix) ? definition.strategy.matrix : undefined;
      const env = { ...workflowEnv, ...(isMapping(definition.env) ? definition.env : {}) };
      const runsTests = mentionsTest(job) || mentionsTest(definition.name) || definition.steps.some((step) => isMapping(step) && (mentionsTest(step.run) || mentionsTest(step.name)));
      for (const step of definition.steps) {
        if (!isMapping(step) || typeof step.uses !== 'string' || !/^actions\/setup-node@/.test(step.uses.trim())) continue;
        const expanded = isMapping(step.with) ? expand(step.with['node-version'], matrix, { ...env, ...(isMapping(step.env) ? step.env : {}) }) : undefined;
        if (expanded) found.push({ file, job, runsTests, ...expanded });
      }
    }
  }
  return found;
}
