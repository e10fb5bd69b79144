import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  ApprovalDecisionRequest,
  ApprovalView,
  CreateTaskRequest,
  CreateTaskResponse,
  ReviewRequest,
  SendMessageRequest,
  Task,
  TaskDiffResponse,
  TaskFileResponse,
  TaskApprovalsResponse,
  TaskListResponse,
  TaskState,
  isFinalState,
} from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { pathEndsWith, testFileOf } from '../feedback/reproducing';
import { maskSecrets } from '../policy/mask';
import { policyWorkers } from '../policy/pool';
import { issueTestEditsLabel } from '../policy/test-edits';
import { applyReview, decideApproval, type DecisionDeps } from '../runner/review';
import { fileAfter, leftOutFiles, reviewRounds, roundDiff } from '../runner/review-files';
import { latestRound } from '../followup/rounds';
import { pendingPause } from '../runner/steering';
import type { Store, User } from '../store/types';
import { describeApproval, describeApprovals } from './approvals';
import { loadOwnedTask, loadTaskAsReader, requireUser } from './auth';
import type { AppDeps } from './deps';
import { changedFiles, contentAfter } from './diff-files';

const TaskParams = z.object({ id: z.string().min(1).max(200) });

/**
 * The submission as it is stored: secrets in the ticket's title and body and in a selection's
 * text become markers before the task row and `task.created` are written (a key pasted into a
 * ticket is then never stored, shown to the model or put in a PR title).
 */
export function maskedSubmission(body: CreateTaskRequest, known: readonly string[]): CreateTaskRequest {
  const ticket = { ...body.ticket, title: maskSecrets(body.ticket.title, { known }), body: maskSecrets(body.ticket.body, { known }) };
  const { selection } = body.context;
  const context = selection ? { ...body.context, selection: { ...selection, text: maskSecrets(selection.text, { path: selection.path, known }) } } : body.context;
  return { ...body, ticket, context };
}

/**
 * A named reproducing test that is a file path must be a file at the base commit (by path suffix:
 * `foo.test.js` names `test/foo.test.js`). A test name cannot be checked before the suite has run
 * at the base; the agent's first note says when one is not in the suite.
 */
async function checkReproducingTests(deps: AppDeps, repo: string, body: CreateTaskRequest): Promise<void> {
  const named = (body.reproducingTests ?? []).map((test, index) => ({ index, file: testFileOf(test) }));
  if (!named.some((test) => test.file) || !deps.baseFiles?.list) return;
  const files = await deps.baseFiles.list(repo, body.context.baseSha);
  if (!files) return;
  for (const { index, file } of named) {
    if (!file || files.some((path) => pathEndsWith(path, file))) continue;
    throw new DockhandError('bad_request', `reproducingTests.${index}: ${file} is not a file of ${repo} at ${body.context.baseSha.slice(0, 12)}`, {
      field: `reproducingTests.${index}`,
      hint: 'name a test file that exists at the base commit (a path or its ending, e.g. test/parse.test.js), or a test by its name',
    });
  }
}
/** States in which the agent works (or is about to): a pause request means something there. */
const PAUSABLE: readonly TaskState[] = ['queued', 'provisioning', 'running', 'awaiting_approval', 'verifying'];
/** A followed PR's task with its latest follow-up round (read from the log of tasks that opened a PR only). */
async function withRound(store: Pick<Store, 'listEvents'>, task: Task): Promise<Task> {
  if (!task.prUrl) return task;
  const round = latestRound(await store.listEvents(task.id));
  return round === undefined ? task : { ...task, round };
}

export async function taskRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const decisions: DecisionDeps = {
    store: deps.store,
    events: deps.events,
    wake: () => deps.control.wake(),
    ...(deps.requiredApprovals ? { requiredApprovals: deps.requiredApprovals } : {}),
    ...(deps.repoPolicy ? { repoPolicy: deps.repoPolicy } : {}),
  };

  const loadForOverride = (user: User, taskId: string) => loadTaskAsReader(deps.store, deps.repoPolicy, user, taskId);

  api.post('/tasks', {
    schema: { tags: ['tasks'], summary: 'Submit a ticket', body: CreateTaskRequest, response: { 202: CreateTaskResponse } },
  }, async (request, reply) => {
    const user = requireUser(request);
    // Before anything is stored: a registered repository the caller may use, and its base commit.
    const registration = await deps.repos.admit(user, request.body.context);
    await checkReproducingTests(deps, registration.name, request.body);
    // Test edits by the issue's label: read from the forge, never taken from the client.
    const { allowTestEditsLabel: _sent, ...submitted } = request.body;
    const label = await issueTestEditsLabel(deps.tickets, registration.name, submitted.ticket).catch((error: unknown) => {
      request.log.warn({ err: error, repo: registration.name }, 'could not read the issue labels from the forge: submitted without the test-edits label');
      return undefined;
    });
    const labelled = label ? { allowTestEdits: true, allowTestEditsLabel: label } : {};
    const body = maskedSubmission({ ...submitted, ...labelled, context: { ...submitted.context, repo: registration.name } }, deps.events.knownSecrets);
    const { task, events } = await deps.store.createTask(user.name, body);
    deps.events.published(events);
    deps.control.wake();
    request.log.info({ taskId: task.id, repo: task.context.repo }, 'task submitted');
    return reply.code(202).send({ id: task.id });
  });

  api.get('/tasks', {
    schema: {
      tags: ['tasks'],
      summary: "List tasks (your own; admins see everyone's unless mine=true)",
      querystring: z.object({
        state: TaskState.optional(),
        repo: z.string().optional(),
        cursor: z.string().optional(),
        limit: z.coerce.number().int().min(1).max(200).default(50),
        mine: z.enum(['true', 'false']).optional(),
      }),
      response: { 200: TaskListResponse },
    },
  }, async (request) => {
    const user = requireUser(request);
    const { state, repo, cursor, limit, mine } = request.query;
    const owner = user.role === 'admin' && mine !== 'true' ? undefined : user.name;
    const page = await deps.store.listTasks({
      limit,
      ...(owner === undefined ? {} : { owner }),
      ...(state === undefined ? {} : { state }),
      ...(repo === undefined ? {} : { repo }),
      ...(cursor === undefined ? {} : { cursor }),
    });
    return { tasks: await Promise.all(page.tasks.map((task) => withRound(deps.store, task))), nextCursor: page.nextCursor ?? null };
  });

  api.get('/tasks/:id', {
    schema: { tags: ['tasks'], summary: 'The task (for its requester, admins, and the owners of its repo)', params: TaskParams, response: { 200: Task } },
  }, async (request) => withRound(deps.store, (await loadForOverride(requireUser(request), request.params.id)).task));

  api.post('/tasks/:id/messages', {
    schema: {
      tags: ['tasks'],
      summary: 'Steer: a message the agent reads before its next model call',
      params: TaskParams,
      body: SendMessageRequest,
      response: { 202: z.object({ seq: z.number() }) },
    },
  }, async (request, reply) => {
    const user = requireUser(request);
    const task = await loadOwnedTask(deps.store, user, request.params.id);
    if (isFinalState(task.state) || task.state === 'pr_open' || task.state === 'pushing') {
      throw new DockhandError('conflict', `task ${task.id} is ${task.state}; it takes no more messages`);
    }
    // Recorded on arrival (durable, visible at once); a running loop gets it through its
    // steering source and injects it before its next model call.
    const event = await deps.events.append(task.id, { type: 'user.message', data: { from: user.name, text: request.body.text } });
    if (task.state === 'awaiting_review') {
      // A message on a finished diff means "keep working on it".
      await deps.events.append(task.id, { type: 'task.state', data: { state: 'running', reason: `message from ${user.name}` } });
      deps.control.wake();
    }
    return reply.code(202).send({ seq: event.seq });
  });

  api.post('/tasks/:id/interrupt', {
    schema: { tags: ['tasks'], summary: 'Stop the task (it ends cancelled; the diff so far is kept)', params: TaskParams, response: { 202: Task } },
  }, async (request, reply) => {
    const user = requireUser(request);
    const task = await loadOwnedTask(deps.store, user, request.params.id);
    if (isFinalState(task.state) || task.state === 'pr_open') {
      throw new DockhandError('conflict', `task ${task.id} is ${task.state}; nothing to interrupt`);
    }
    await deps.events.append(task.id, { type: 'task.state', data: { state: 'cancelled', reason: `interrupted by ${user.name}` } });
    deps.control.interrupt(task.id);
    return reply.code(202).send(await loadOwnedTask(deps.store, user, task.id));
  });

  api.post('/tasks/:id/pause', {
    schema: {
      tags: ['tasks'],
      summary: 'Pause: the agent stops at its next safe point (after the current tool calls) and waits; the sandbox stays, the wall clock stops',
      params: TaskParams,
      response: { 202: Task },
    },
  }, async (request, reply) => {
    const user = requireUser(request);
    const task = await loadOwnedTask(deps.store, user, request.params.id);
    if (!PAUSABLE.includes(task.state) && task.state !== 'paused') {
      throw new DockhandError('conflict', `task ${task.id} is ${task.state}; only a task the agent works on can be paused`);
    }
    if (task.state !== 'paused' && pendingPause(await deps.store.listEvents(task.id)) === undefined) {
      await deps.events.append(task.id, { type: 'task.pause_requested', data: { by: user.name } });
      // Nothing runs yet: paused at once (the runner never moves a paused task on by itself).
      if (task.state === 'queued') await deps.events.append(task.id, { type: 'task.state', data: { state: 'paused', reason: `paused by ${user.name}` } });
    }
    return reply.code(202).send(await loadOwnedTask(deps.store, user, task.id));
  });

  api.post('/tasks/:id/resume', {
    schema: {
      tags: ['tasks'],
      summary: 'Resume a paused task (messages sent while paused are read first), or withdraw a pause not reached yet',
      params: TaskParams,
      response: { 202: Task },
    },
  }, async (request, reply) => {
    const user = requireUser(request);
    const task = await loadOwnedTask(deps.store, user, request.params.id);
    const events = await deps.store.listEvents(task.id);
    if (task.state !== 'paused' && pendingPause(events) === undefined) {
      throw new DockhandError('conflict', `task ${task.id} is ${task.state} and not paused; nothing to resume`);
    }
    await deps.events.append(task.id, { type: 'task.resumed', data: { by: user.name } });
    if (task.state === 'paused') {
      // Paused before it had a sandbox: back in the queue; else the agent goes on in its sandbox.
      const state = events.some((e) => e.type === 'sandbox.ready') ? 'running' : 'queued';
      await deps.events.append(task.id, { type: 'task.state', data: { state, reason: `resumed by ${user.name}` } });
      deps.control.wake();
    }
    return reply.code(202).send(await loadOwnedTask(deps.store, user, task.id));
  });

  api.get('/tasks/:id/approvals', {
    schema: {
      tags: ['approvals'],
      summary: 'Approvals of the task; each pending one says whether the caller may decide it (canDecide) and who may (deciders)',
      params: TaskParams,
      response: { 200: TaskApprovalsResponse },
    },
  }, async (request) => {
    const user = requireUser(request);
    const { task } = await loadForOverride(user, request.params.id);
    return {
      approvals: await describeApprovals(deps, user, task, await deps.store.listApprovals(task.id)),
      canReview: task.owner === user.name || user.role === 'admin',
    };
  });

  api.post('/tasks/:id/approvals/:approvalId', {
    schema: {
      tags: ['approvals'],
      params: TaskParams.extend({ approvalId: z.string().min(1).max(200) }),
      body: ApprovalDecisionRequest,
      response: { 200: ApprovalView },
    },
  }, async (request) => {
    const user = requireUser(request);
    const { task, asRepoOwner } = await loadForOverride(user, request.params.id);
    if (asRepoOwner) {
      const approval = await deps.store.getApproval(request.params.approvalId);
      if (approval?.taskId === task.id && approval.kind !== 'policy_override') {
        throw new DockhandError('forbidden', `${user.name} owns ${task.context.repo} and may decide its policy overrides, not this ${approval.kind} approval`, {
          hint: `the task's requester (${task.owner}) or an admin decides it`,
        });
      }
    }
    const decided = await decideApproval(decisions, task, user, request.params.approvalId, request.body);
    return describeApproval(deps, user, task, decided);
  });

  api.post('/tasks/:id/review', {
    schema: { tags: ['tasks'], summary: 'Approve, request changes or reject the diff', params: TaskParams, body: ReviewRequest, response: { 200: Task } },
  }, async (request) => {
    const user = requireUser(request);
    const task = await loadOwnedTask(deps.store, user, request.params.id);
    return applyReview(decisions, task, user, request.body);
  });

  /**
   * The diff as the store holds it (masked); a live diff from the sandbox is masked the same way.
   * While the agent works, its sandbox's diff comes first when this process holds it: a stored
   * result is then the previous review round's.
   */
  async function currentDiff(task: Task): Promise<string> {
    const working = !isFinalState(task.state) && !['awaiting_review', 'pushing', 'pr_open'].includes(task.state);
    const live = working ? await deps.control.liveDiff?.(task.id) : undefined;
    if (live !== undefined) return (await deps.events.maskResult({ diff: live, summary: '' })).diff;
    const result = await deps.store.getResult(task.id);
    if (result) return result.diff;
    return (await deps.events.maskResult({ diff: (await deps.control.liveDiff?.(task.id)) ?? '', summary: '' })).diff;
  }

  api.get('/tasks/:id/diff', {
    schema: { tags: ['review'], params: TaskParams, response: { 200: TaskDiffResponse } },
  }, async (request) => {
    const { task } = await loadForOverride(requireUser(request), request.params.id);
    const diff = await currentDiff(task);
    const events = await deps.store.listEvents(task.id);
    const { round, reviewedDiff } = reviewRounds(events);
    const leftOut = leftOutFiles(events);
    if (reviewedDiff === undefined) return { baseSha: task.context.baseSha, diff, files: changedFiles(diff), round, leftOut };
    const ofRound = await roundDiff(reviewedDiff, diff, (path) => maskedBase(task, path)).catch((error: unknown) => {
      throw new DockhandError('conflict', `cannot tell this round's changes apart: ${error instanceof Error ? error.message : String(error)}`, { hint: 'the whole diff (diff) is still right' });
    });
    return { baseSha: task.context.baseSha, diff, files: changedFiles(diff), round, roundDiff: ofRound.diff, roundFiles: ofRound.files, leftOut };
  });

  /** A file at the base SHA with secrets masked as in the stored diff (which then applies to it). */
  async function maskedBase(task: Task, path: string): Promise<string | null> {
    if (!deps.baseFiles) throw new DockhandError('internal', 'this server cannot read base files');
    const raw = await deps.baseFiles.read(task.context.repo, task.context.baseSha, path);
    return raw === null ? null : policyWorkers.run('maskSecrets', raw, { path, known: [...deps.events.knownSecrets] });
  }

  api.get('/tasks/:id/files', {
    schema: {
      tags: ['review'],
      params: TaskParams,
      querystring: z.object({ path: z.string().min(1).max(4096) }),
      response: { 200: TaskFileResponse },
    },
  }, async (request) => {
    const task = await loadOwnedTask(deps.store, requireUser(request), request.params.id);
    const path = request.query.path;
    if (path.startsWith('/') || path.split('/').includes('..')) {
      throw new DockhandError('bad_request', 'path must be relative to the repository root', { field: 'path' });
    }
    // Secrets in the file are masked as in the stored diff, which then applies to the masked base.
    const base = await maskedBase(task, path);
    const after = contentAfter(await currentDiff(task), path, base);
    if (after === undefined) throw new DockhandError('conflict', `the diff for ${path} does not apply to the base`, { field: 'path' });
    const { reviewedDiff } = reviewRounds(await deps.store.listEvents(task.id));
    if (reviewedDiff === undefined) return { path, base, after };
    const reviewed = fileAfter(reviewedDiff, path, base);
    if (reviewed === undefined) throw new DockhandError('conflict', `the diff reviewed last for ${path} does not apply to the base`, { field: 'path' });
    return { path, base, after, reviewed };
  });
}
