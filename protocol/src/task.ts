import { z } from 'zod';
import { TaskState } from './states';

const Sha = z
  .string()
  .regex(/^[0-9a-f]{40}$/, 'must be a full 40-character lowercase hex commit SHA');

export const Ticket = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('issue'),
    /** Forge issue number, or the key in another tracker. */
    id: z.string().min(1).max(200),
    title: z.string().min(1).max(500),
    body: z.string().max(100_000).default(''),
    url: z.string().url().optional(),
  }),
  z.object({
    kind: z.literal('text'),
    title: z.string().min(1).max(500),
    body: z.string().max(100_000).default(''),
  }),
]);
export type Ticket = z.infer<typeof Ticket>;

export const Selection = z
  .object({
    path: z.string().min(1).max(4096),
    startLine: z.number().int().min(1),
    endLine: z.number().int().min(1),
    text: z.string().max(200_000),
  })
  .refine((selection) => selection.endLine >= selection.startLine, {
    message: 'must not be before startLine',
    path: ['endLine'],
  });
export type Selection = z.infer<typeof Selection>;

/** What the extension learned from the developer's workspace. */
export const RepoContext = z.object({
  /** Remote URL or a local path the server can read (the local forge uses paths). */
  repo: z.string().min(1).max(4096),
  baseSha: Sha,
  branch: z.string().max(255).optional(),
  activeFile: z.string().max(4096).optional(),
  selection: Selection.optional(),
  contextFiles: z.array(z.string().max(4096)).max(50).default([]),
  dirty: z.boolean().default(false),
});
export type RepoContext = z.infer<typeof RepoContext>;

export const Budgets = z.object({
  maxTurns: z.number().int().min(1).max(500).default(40),
  maxCostUsd: z.number().positive().max(1000).default(5),
  maxWallClockSeconds: z.number().int().min(10).max(86_400).default(1800),
});
export type Budgets = z.infer<typeof Budgets>;

export const TaskPriority = z.enum(['routine', 'normal']);
export type TaskPriority = z.infer<typeof TaskPriority>;

export const CreateTaskRequest = z.object({
  ticket: Ticket,
  context: RepoContext,
  budgets: Budgets.partial().default({}),
  priority: TaskPriority.default('normal'),
  /** Ticket explicitly allows the agent to change tests. */
  allowTestEdits: z.boolean().default(false),
  /**
   * Set by the server, never by a client (a value sent is replaced): the label on the forge issue
   * that allowed test edits (`dockhand:allow-test-edits`), when the requester decided so.
   */
  allowTestEditsLabel: z.string().max(100).optional(),
  /**
   * Tests that reproduce the ticket's bug (a test id, a test name, or a test file path): they must
   * pass before the task may finish, also when they already fail at the base commit.
   */
  reproducingTests: z.array(z.string().trim().min(1).max(1000)).max(50).optional(),
});
export type CreateTaskRequest = z.infer<typeof CreateTaskRequest>;

export const TaskUsage = z.object({
  turns: z.number().int().min(0),
  inputTokens: z.number().int().min(0),
  outputTokens: z.number().int().min(0),
  cacheReadTokens: z.number().int().min(0),
  cacheWriteTokens: z.number().int().min(0),
  costUsd: z.number().min(0),
});
export type TaskUsage = z.infer<typeof TaskUsage>;

export const Task = z.object({
  id: z.string(),
  owner: z.string(),
  state: TaskState,
  ticket: Ticket,
  context: RepoContext,
  budgets: Budgets,
  priority: TaskPriority,
  allowTestEdits: z.boolean(),
  /** The issue label that set `allowTestEdits` (the requester's decision on the forge). */
  allowTestEditsLabel: z.string().optional(),
  /** The submission's `reproducingTests` (the ticket may name more; see the baseline note). */
  reproducingTests: z.array(z.string()).optional(),
  usage: TaskUsage,
  lastSeq: z.number().int().min(0),
  createdAt: z.string(),
  updatedAt: z.string(),
  prUrl: z.string().optional(),
  /** A followed PR's latest follow-up round (2, 3, …; round 1 is the first run), read from its `pr.feedback` events; absent before any. */
  round: z.number().int().min(2).optional(),
  error: z.string().optional(),
});
export type Task = z.infer<typeof Task>;
