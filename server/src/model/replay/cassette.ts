import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { formatFieldPath } from '@dockhand/protocol';
import { DockhandError } from '../../errors';

/*
 * A cassette is the script of one model conversation: the ordered assistant turns the replay
 * server answers with, what each turn expects to follow, and the failures to inject. The format
 * is documented with an example in ./README.md.
 */

const TextBlock = z.object({ type: z.literal('text'), text: z.string() }).strict();
const ToolUseBlock = z
  .object({
    type: z.literal('tool_use'),
    /** Left out, the server makes a stable id that encodes the turn (see positionOf). */
    id: z.string().min(1).optional(),
    name: z.string().min(1),
    input: z.record(z.string(), z.unknown()).default({}),
  })
  .strict();
export const CassetteBlock = z.discriminatedUnion('type', [TextBlock, ToolUseBlock]);
export type CassetteBlock = z.infer<typeof CassetteBlock>;

const isRegex = (source: string): boolean => {
  try {
    new RegExp(source);
    return true;
  } catch {
    return false;
  }
};

/**
 * Checks on the request a turn answers. "Tool results" are the tool_result blocks of the last
 * user message; "user text" is its text; "tool choice" is the request's `tool_choice`. Every
 * given check must hold.
 */
export const Expectation = z
  .object({
    toolResultContains: z.string().min(1).optional(),
    toolResultMatches: z.string().min(1).refine(isRegex, 'not a valid regular expression').optional(),
    toolResultIsError: z.boolean().optional(),
    userTextContains: z.string().min(1).optional(),
    /** The request's tool_choice (absent counts as `auto`); `name` only with `tool`, and optional there. */
    toolChoice: z
      .object({ type: z.enum(['auto', 'any', 'tool', 'none']), name: z.string().min(1).optional() })
      .strict()
      .refine((choice) => choice.name === undefined || choice.type === 'tool', { message: 'name is only for type tool', path: ['name'] })
      .optional(),
  })
  .strict();
export type Expectation = z.infer<typeof Expectation>;

const faultCommon = {
  /** How many attempts at this turn get the fault before it plays normally. */
  times: z.number().int().min(1).default(1),
  /** Only requests for a model id starting with this get the fault (e.g. the primary, not the fallback). */
  model: z.string().min(1).optional(),
};
const afterDeltas = z.number().int().min(0).default(2);
export const Fault = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('rate_limit'), retryAfterSeconds: z.number().min(0).default(1), ...faultCommon }).strict(),
  z.object({ kind: z.literal('overloaded'), ...faultCommon }).strict(),
  z.object({ kind: z.literal('api_error'), ...faultCommon }).strict(),
  /** The connection dies after this many content deltas: `reset` destroys the socket, `end` ends the body early. */
  z.object({ kind: z.literal('cut'), afterDeltas, mode: z.enum(['reset', 'end']).default('reset'), ...faultCommon }).strict(),
  /** An SSE `error` event mid-stream, as the API sends when it becomes overloaded during a response. */
  z
    .object({
      kind: z.literal('stream_error'),
      afterDeltas,
      errorType: z.enum(['overloaded_error', 'api_error']).default('overloaded_error'),
      ...faultCommon,
    })
    .strict(),
]);
export type Fault = z.infer<typeof Fault>;

export const Turn = z
  .object({
    /** A label used in error messages and the request log. */
    name: z.string().optional(),
    /** Selection predicate, used only inside `oneOf`. */
    when: Expectation.optional(),
    /** Assertion: a request that does not meet it gets a 400 naming the expectation. */
    expect: Expectation.optional(),
    faults: z.array(Fault).default([]),
    content: z.array(CassetteBlock).min(1),
    /** Defaults to `tool_use` when the turn has a tool_use block, else `end_turn`. */
    stop_reason: z.enum(['end_turn', 'tool_use', 'max_tokens', 'stop_sequence', 'pause_turn', 'refusal']).optional(),
  })
  .strict();
export type Turn = z.infer<typeof Turn>;

/** One position in the conversation: a turn, or alternatives picked by their `when`. */
export const Step = z.union([Turn, z.object({ oneOf: z.array(Turn).min(1) }).strict()]);
export type Step = z.infer<typeof Step>;

export const Cassette = z
  .object({
    description: z.string().optional(),
    /** Pause between streamed events, for demos that should look live. */
    deltaDelayMs: z.number().min(0).max(10_000).default(0),
    turns: z.array(Step).min(1),
  })
  .strict();
export type Cassette = z.infer<typeof Cassette>;
export type CassetteInput = z.input<typeof Cassette>;

/** Validates a cassette; a bad one is a `bad_request` naming the field (`turns[2].content[0].name`). */
export function parseCassette(value: unknown, source = 'cassette'): Cassette {
  const parsed = Cassette.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0] && mostSpecific(parsed.error.issues[0]);
  const field = issue ? formatFieldPath(issue.path) : '';
  throw new DockhandError('bad_request', `${source}: ${field ? `${field}: ` : ''}${issue?.message ?? 'invalid'}`, {
    ...(field ? { field } : {}),
    hint: 'see server/src/model/replay/README.md for the cassette format',
  });
}

interface Issue {
  path: PropertyKey[];
  message: string;
  code?: string;
  errors?: Issue[][];
}

/**
 * A step is a turn or a `oneOf`; zod reports a bad one as "Invalid input" for the union. The
 * branch that got furthest before failing is the one the author meant, so report its issue.
 */
function mostSpecific(issue: Issue): Issue {
  if (issue.code !== 'invalid_union' || !issue.errors?.length) return issue;
  let best: Issue | undefined;
  for (const branch of issue.errors) {
    const first = branch[0];
    if (!first) continue;
    const candidate = mostSpecific(first);
    if (!best || candidate.path.length > best.path.length) best = candidate;
  }
  return best ? { ...best, path: [...issue.path, ...best.path] } : issue;
}

/** Reads a `.json`, `.yaml` or `.yml` cassette file. */
export function loadCassette(path: string): Cassette {
  const text = readFileSync(path, 'utf8');
  const extension = extname(path).toLowerCase();
  let value: unknown;
  try {
    value = extension === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new DockhandError('bad_request', `${path}: not valid ${extension === '.json' ? 'JSON' : 'YAML'}`, {
      cause: error,
    });
  }
  return parseCassette(value, path);
}

/** The turns of a step, each with its index among the alternatives. */
export function stepTurns(step: Step): Turn[] {
  return 'oneOf' in step ? step.oneOf : [step];
}

export function stopReasonOf(turn: Turn): NonNullable<Turn['stop_reason']> {
  return turn.stop_reason ?? (turn.content.some((block) => block.type === 'tool_use') ? 'tool_use' : 'end_turn');
}

/** Ids the server gives tool_use blocks without one: `toolu_replay_<position>_<alternative>_<block>`. */
export function replayToolUseId(position: number, alternative: number, block: number): string {
  return `toolu_replay_${position}_${alternative}_${block}`;
}

const REPLAY_ID = /^toolu_replay_(\d+)_\d+_\d+$/;

/** The cassette position whose turn produced a tool_use id, if this cassette made it. */
export function positionOfToolUseId(cassette: Cassette, id: string): number | undefined {
  const match = REPLAY_ID.exec(id);
  if (match?.[1] !== undefined) return Number(match[1]);
  for (const [position, step] of cassette.turns.entries()) {
    for (const turn of stepTurns(step)) {
      if (turn.content.some((block) => block.type === 'tool_use' && block.id === id)) return position;
    }
  }
  return undefined;
}
