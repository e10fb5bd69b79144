import { z } from 'zod';
import { formatFieldPath } from '@dockhand/protocol';
import { pythonJsonDumps } from './python-json';

/*
 * SWE-bench's two file formats, read and written as SWE-bench has them:
 *
 * - instances (one JSON object a line): `repo`, `instance_id`, `base_commit`, `patch` (the gold
 *   fix), `test_patch`, `problem_statement`, `hints_text`, `created_at`, `version`, `FAIL_TO_PASS`,
 *   `PASS_TO_PASS` (each a JSON-encoded list of test ids inside a string, as the dataset stores
 *   them; a plain JSON list, as SWE-smith writes them, is read too and written back the same way),
 *   `environment_setup_commit`; plus our optional `dockhand` object (where the repository is,
 *   install/test command overrides, how the instance was made).
 * - predictions: `instance_id`, `model_name_or_path`, `model_patch`.
 *
 * A bad line is an error naming the line and the field; the other lines are still read. Keys we
 * do not know are kept and written back in their place, so reading and writing a file changes
 * nothing in it.
 */

const Sha = z.string().regex(/^[0-9a-f]{40}$/, 'must be a full 40-character lowercase hex commit SHA');

/** A list of test ids: SWE-bench's JSON-in-a-string, or a plain list. */
const TestIdList = z.unknown().transform((value, context): string[] => {
  let parsed: unknown = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value);
    } catch {
      context.addIssue({ code: 'custom', message: `must be a JSON list of test ids (as SWE-bench stores it, e.g. "[\\"test_a\\"]"); got ${JSON.stringify(value.slice(0, 60))}` });
      return z.NEVER;
    }
  }
  const list = z.array(z.string().min(1)).safeParse(parsed);
  if (!list.success) {
    context.addIssue({ code: 'custom', message: 'must be a list of test id strings (or that list JSON-encoded in a string)' });
    return z.NEVER;
  }
  return list.data;
});

/** Our own optional fields, under one key so they never collide with SWE-bench's. */
export const DockhandInstanceFields = z
  .object({
    /** The repository: a git directory holding `base_commit` (relative paths: against the repos directory). */
    repo_path: z.string().min(1).optional(),
    install_command: z.string().min(1).optional(),
    test_command: z.string().min(1).optional(),
    language: z.string().min(1).optional(),
    runner: z.string().min(1).optional(),
    /** How the instance was made: a commit of the repository's history, or a planted bug. */
    origin: z.enum(['history', 'planted', 'external']).optional(),
  })
  .passthrough();

export const InstanceRecord = z
  .object({
    repo: z.string().min(1).max(300),
    instance_id: z.string().regex(/^[^\s/\\]{1,300}$/, 'must be 1-300 characters without spaces or slashes'),
    base_commit: Sha,
    patch: z.string().optional(),
    test_patch: z.string(),
    problem_statement: z.string().min(1, 'must not be empty: it is the ticket'),
    hints_text: z.string().optional(),
    created_at: z.string().optional(),
    version: z.string().optional(),
    FAIL_TO_PASS: TestIdList.refine((list) => list.length > 0, 'must name at least one test that the fix makes pass'),
    PASS_TO_PASS: TestIdList,
    environment_setup_commit: z.string().optional(),
    dockhand: DockhandInstanceFields.optional(),
  })
  .passthrough();

export type EvalInstance = z.infer<typeof InstanceRecord> & {
  /** The key order and list encoding read from the file (written back the same way). */
  readonly layout?: RecordLayout;
};

export const PredictionRecord = z
  .object({
    instance_id: z.string().min(1),
    model_name_or_path: z.string().min(1),
    model_patch: z.string().nullable().transform((patch) => patch ?? ''),
  })
  .passthrough();
export type Prediction = z.infer<typeof PredictionRecord> & { readonly layout?: RecordLayout };

export interface RecordLayout {
  keys: string[];
  /** Test id lists that came as plain JSON lists (SWE-smith) rather than JSON in a string. */
  plainLists: string[];
}

export interface LineError {
  line: number;
  field: string;
  message: string;
}

export interface ReadResult<T> {
  records: T[];
  errors: LineError[];
}

/** `line 3: FAIL_TO_PASS: must name …` */
export function describeLineError(error: LineError, file?: string): string {
  return `${file ? `${file}:` : 'line '}${error.line}: ${error.field ? `${error.field}: ` : ''}${error.message}`;
}

const INSTANCE_ORDER = ['repo', 'instance_id', 'base_commit', 'patch', 'test_patch', 'problem_statement', 'hints_text', 'created_at', 'version', 'FAIL_TO_PASS', 'PASS_TO_PASS', 'environment_setup_commit', 'dockhand'];
const PREDICTION_ORDER = ['instance_id', 'model_name_or_path', 'model_patch'];
const LIST_FIELDS = ['FAIL_TO_PASS', 'PASS_TO_PASS'];

function readJsonl<O extends object>(text: string, schema: z.ZodType<O, unknown>, idField: string): ReadResult<O & { layout: RecordLayout }> {
  const records: Array<O & { layout: RecordLayout }> = [];
  const errors: LineError[] = [];
  const seen = new Map<string, number>();
  text.split('\n').forEach((rawLine, index) => {
    const line = index + 1;
    if (rawLine.trim() === '') return;
    let json: unknown;
    try {
      json = JSON.parse(rawLine);
    } catch (error) {
      errors.push({ line, field: '', message: `not valid JSON (${error instanceof Error ? error.message : String(error)})` });
      return;
    }
    if (typeof json !== 'object' || json === null || Array.isArray(json)) {
      errors.push({ line, field: '', message: 'must be a JSON object' });
      return;
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) errors.push({ line, field: formatFieldPath(issue.path), message: issue.message });
      return;
    }
    const id = String(Object.entries(json).find(([key]) => key === idField)?.[1]);
    const earlier = seen.get(id);
    if (earlier !== undefined) {
      errors.push({ line, field: idField, message: `${id} is already on line ${earlier}; each ${idField} may appear once` });
      return;
    }
    seen.set(id, line);
    const plainLists = LIST_FIELDS.filter((field) => Array.isArray(Object.entries(json).find(([key]) => key === field)?.[1]));
    records.push({ ...parsed.data, layout: { keys: Object.keys(json), plainLists } });
  });
  return { records, errors };
}

export function readInstances(text: string): ReadResult<EvalInstance> {
  return readJsonl(text, InstanceRecord, 'instance_id');
}

export function readPredictions(text: string): ReadResult<Prediction> {
  return readJsonl(text, PredictionRecord, 'instance_id');
}

function orderedRecord(value: Record<string, unknown>, defaultOrder: string[], layout: RecordLayout | undefined): Record<string, unknown> {
  const keys = layout?.keys ?? defaultOrder.filter((key) => key in value);
  const rest = Object.keys(value).filter((key) => key !== 'layout' && !keys.includes(key));
  const out: Record<string, unknown> = {};
  for (const key of [...keys, ...rest]) if (key !== 'layout' && value[key] !== undefined) out[key] = value[key];
  return out;
}

/** One instance line, as SWE-bench writes it (lists JSON-encoded unless they were read as plain lists). */
export function instanceLine(instance: EvalInstance): string {
  const { layout, ...fields } = instance;
  const record = orderedRecord(fields, INSTANCE_ORDER, layout);
  for (const field of LIST_FIELDS) {
    const list = record[field];
    if (Array.isArray(list) && !layout?.plainLists.includes(field)) record[field] = pythonJsonDumps(list);
  }
  return pythonJsonDumps(record);
}

export function predictionLine(prediction: Prediction): string {
  const { layout, ...fields } = prediction;
  return pythonJsonDumps(orderedRecord(fields, PREDICTION_ORDER, layout));
}

export function writeInstances(instances: EvalInstance[]): string {
  return instances.map((instance) => `${instanceLine(instance)}\n`).join('');
}

export function writePredictions(predictions: Prediction[]): string {
  return predictions.map((prediction) => `${predictionLine(prediction)}\n`).join('');
}

/** Files a unified diff touches (either side; /dev/null left out). */
export function patchFiles(patch: string): string[] {
  const files = new Set<string>();
  for (const match of patch.matchAll(/^diff --git a\/(.+?) b\/(.+)$/gm)) {
    if (match[1]) files.add(match[1]);
    if (match[2]) files.add(match[2]);
  }
  if (files.size === 0) {
    // A plain unified diff: file names only on a ---/+++ pair right before a hunk.
    for (const match of patch.matchAll(/^--- (?:a\/)?([^\t\n]+).*\n\+\+\+ (?:b\/)?([^\t\n]+).*\n@@/gm)) {
      for (const name of [match[1], match[2]]) if (name && name !== '/dev/null') files.add(name);
    }
  }
  return [...files].sort();
}
