import {
  ApprovalDecisionRequest,
  ApprovalInboxResponse,
  CreateTaskRequest,
  CreateTaskResponse,
  ErrorBody,
  HealthResponse,
  PullRequestView,
  ReadinessCheckStatus,
  RepoListResponse,
  ReviewRequest,
  SendMessageRequest,
  Task,
  TaskApprovalsResponse,
  TaskDiffResponse,
  TaskFileResponse,
  TaskListResponse,
  TicketListResponse,
  formatFieldPath,
  type InboxApproval,
  type ReviewComment,
  type TicketSummary,
} from '@dockhand/protocol';
import { z } from 'zod';
import { DockhandError } from './errors';

/*
 * The extension's only door to the Dockhand server's HTTP API. Every request body is checked with
 * the protocol's schema before it leaves and every response is parsed with one before it is used.
 */

export type FetchLike = (url: string, init: { method: string; headers: Record<string, string>; body?: string; signal?: AbortSignal }) => Promise<{
  ok: boolean;
  status: number;
  text(): Promise<string>;
}>;

export interface ApiClientOptions {
  baseUrl: string;
  /** Read on every request so signing in or out takes effect at once. */
  token(): Promise<string | undefined>;
  fetch?: FetchLike;
  timeoutMs?: number;
}

// A few servers answer lists bare; accept that too rather than failing on a wrapper.
const TaskList = z.union([TaskListResponse, z.array(Task).transform((tasks) => ({ tasks, nextCursor: null }))]);
const OneTask = z.union([Task, z.object({ task: Task }).transform((body) => body.task)]);
const Tickets = z.union([TicketListResponse, z.array(TicketListResponse.shape.tickets.element).transform((tickets) => ({ tickets }))]);

export class ApiClient {
  private readonly fetchImpl: FetchLike;

  constructor(private readonly options: ApiClientOptions) {
    this.fetchImpl = options.fetch ?? ((url, init) => fetch(url, init));
  }

  get baseUrl(): string {
    return this.options.baseUrl.replace(/\/+$/, '');
  }

  async createTask(request: z.input<typeof CreateTaskRequest>): Promise<string> {
    const body = CreateTaskRequest.safeParse(request);
    if (!body.success) {
      const issue = body.error.issues[0];
      throw new DockhandError('bad_request', `The task is not valid: ${issue?.message ?? 'unknown problem'}`, {
        field: issue ? formatFieldPath(issue.path) : undefined,
      });
    }
    const response = await this.request('POST', '/v1/tasks', CreateTaskResponse, body.data);
    return response.id;
  }

  async listTasks(): Promise<Task[]> {
    return (await this.request('GET', '/v1/tasks', TaskList)).tasks;
  }

  getTask(taskId: string): Promise<Task> {
    return this.request('GET', `/v1/tasks/${encodeURIComponent(taskId)}`, OneTask);
  }

  async sendMessage(taskId: string, text: string): Promise<void> {
    await this.request('POST', `/v1/tasks/${encodeURIComponent(taskId)}/messages`, z.unknown(), SendMessageRequest.parse({ text }));
  }

  /** The agent stops at its next safe point; the task becomes `paused` (the answer is the task as it is now). */
  pause(taskId: string): Promise<Task> {
    return this.request('POST', `/v1/tasks/${encodeURIComponent(taskId)}/pause`, OneTask, {});
  }

  /** A paused task goes on (or a pause not yet reached is withdrawn). */
  resume(taskId: string): Promise<Task> {
    return this.request('POST', `/v1/tasks/${encodeURIComponent(taskId)}/resume`, OneTask, {});
  }

  async interrupt(taskId: string): Promise<void> {
    await this.request('POST', `/v1/tasks/${encodeURIComponent(taskId)}/interrupt`, z.unknown(), {});
  }

  async decideApproval(taskId: string, approvalId: string, decision: 'approved' | 'denied', comment?: string): Promise<void> {
    await this.request(
      'POST',
      `/v1/tasks/${encodeURIComponent(taskId)}/approvals/${encodeURIComponent(approvalId)}`,
      z.unknown(),
      ApprovalDecisionRequest.parse({ decision, comment }),
    );
  }

  /** The task's approvals, each pending one saying whether this user may decide it, and whether this user may review it. */
  listTaskApprovals(taskId: string): Promise<TaskApprovalsResponse> {
    return this.request('GET', `/v1/tasks/${encodeURIComponent(taskId)}/approvals`, TaskApprovalsResponse);
  }

  /** What waits for this user's decision, newest first, up to `maxPages` pages of 100. */
  async listApprovalInbox(maxPages = 5): Promise<{ approvals: InboxApproval[]; more: boolean }> {
    const approvals: InboxApproval[] = [];
    let cursor: string | null | undefined;
    for (let page = 0; page < maxPages; page++) {
      const query = `state=pending&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const body = await this.request('GET', `/v1/approvals?${query}`, ApprovalInboxResponse);
      approvals.push(...body.approvals);
      cursor = body.nextCursor;
      if (!cursor) return { approvals, more: false };
    }
    return { approvals, more: true };
  }

  /** `rejectedFiles`: files left out of the push (approve) or for the agent to revert (request changes). */
  async review(taskId: string, action: ReviewRequest['action'], comments: ReviewComment[] = [], rejectedFiles: string[] = []): Promise<void> {
    await this.request('POST', `/v1/tasks/${encodeURIComponent(taskId)}/review`, z.unknown(), ReviewRequest.parse({ action, comments, rejectedFiles }));
  }

  getDiff(taskId: string): Promise<TaskDiffResponse> {
    return this.request('GET', `/v1/tasks/${encodeURIComponent(taskId)}/diff`, TaskDiffResponse);
  }

  getFile(taskId: string, path: string): Promise<TaskFileResponse> {
    return this.request('GET', `/v1/tasks/${encodeURIComponent(taskId)}/files?path=${encodeURIComponent(path)}`, TaskFileResponse);
  }

  async listTickets(repo: string): Promise<TicketSummary[]> {
    return (await this.request('GET', `/v1/tickets?repo=${encodeURIComponent(repo)}`, Tickets)).tickets;
  }

  /**
   * Whether a Dockhand server answers at the URL (no token needed), and its version. Something
   * else listening there (another web server, a proxy's page) is refused as not Dockhand, naming
   * what it answered, so sign-in is not tried against it.
   */
  async health(): Promise<HealthResponse> {
    const notDockhand = (answered: string) =>
      new DockhandError('not_dockhand', `The server at ${this.baseUrl} is not a Dockhand server (GET /healthz answered ${answered})`, {
        hint: 'Check the server URL ("Dockhand: Set server URL"): use the URL "dockhand serve" or "npm start" printed.',
      });
    let answer: unknown;
    try {
      answer = await this.request('GET', '/healthz', z.unknown(), undefined, { auth: false, timeoutMs: 5_000 });
    } catch (error) {
      if (error instanceof DockhandError && error.code !== 'network') throw notDockhand(error.details.status ? `${error.details.status}` : error.message);
      throw error;
    }
    const parsed = HealthResponse.safeParse(answer);
    if (!parsed.success) throw notDockhand('something other than Dockhand\'s health answer');
    return parsed.data;
  }

  /** Who the token belongs to; `token` checks a token before it is stored. */
  me(token?: string): Promise<{ name: string; role: 'user' | 'admin' }> {
    return this.request('GET', '/v1/me', Me, undefined, { token, timeoutMs: 10_000 });
  }

  /** Repositories this user may submit tasks to (a task names one of them). */
  async listRepos(): Promise<RepoListResponse['repos']> {
    return (await this.request('GET', '/v1/repos', RepoListResponse)).repos;
  }

  /** A pull request Dockhand opened on the local forge, with its comments, reviews and the checks on its head. */
  pullRequest(repo: string, number: number): Promise<PullRequestView> {
    return this.request('GET', `/v1/repos/${repoPath(repo)}/pulls/${number}`, PullRequestView);
  }

  /** Starts the readiness check of a registered repository (install, tests, selection); poll `readinessCheck` until done. */
  startReadinessCheck(repo: string): Promise<ReadinessCheckStatus> {
    return this.request('POST', `/v1/repos/${repoPath(repo)}/check`, ReadinessCheckStatus, {});
  }

  /** The repository's last readiness check: running (with its stages so far), done with its report, or failed. */
  readinessCheck(repo: string): Promise<ReadinessCheckStatus> {
    return this.request('GET', `/v1/repos/${repoPath(repo)}/check`, ReadinessCheckStatus);
  }

  /** ws(s):// URL of a task's event stream, resuming after `afterSeq`. */
  eventsUrl(taskId: string, afterSeq: number): string {
    const url = new URL(`${this.baseUrl}/v1/tasks/${encodeURIComponent(taskId)}/events`);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    url.searchParams.set('after', String(afterSeq));
    return url.toString();
  }

  async authHeaders(): Promise<Record<string, string>> {
    const token = await this.options.token();
    if (!token) throw new DockhandError('not_signed_in', 'Not signed in to the Dockhand server', { hint: 'Run "Dockhand: Sign in".' });
    return { authorization: `Bearer ${token}` };
  }

  private async request<T extends z.ZodType>(
    method: string,
    path: string,
    schema: T,
    body?: unknown,
    options: { auth?: boolean; token?: string; timeoutMs?: number } = {},
  ): Promise<z.output<T>> {
    const auth = options.auth === false ? {} : options.token ? { authorization: `Bearer ${options.token}` } : await this.authHeaders();
    const headers: Record<string, string> = { ...auth, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const url = `${this.baseUrl}${path}`;
    let response: Awaited<ReturnType<FetchLike>>;
    try {
      response = await this.fetchImpl(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(options.timeoutMs ?? this.options.timeoutMs ?? 30_000),
      });
    } catch (error) {
      throw new DockhandError('network', `Cannot reach the Dockhand server at ${this.baseUrl} (${networkReason(error)})`, {
        hint: 'Check the server URL ("Dockhand: Set server URL") and that the server is running.',
      });
    }
    const text = await response.text();
    const json = parseJson(text);
    if (!response.ok) {
      const parsed = ErrorBody.safeParse(json);
      if (parsed.success) {
        const { code, message, field, hint } = parsed.data.error;
        throw new DockhandError(code, message, { status: response.status, field, hint: hint ?? (code === 'unauthenticated' ? SIGN_IN_HINT : undefined) });
      }
      if (response.status === 401) throw new DockhandError('unauthenticated', 'The server did not accept the token', { status: 401, hint: SIGN_IN_HINT });
      throw new DockhandError(statusCode(response.status), `The server answered ${response.status} to ${method} ${path}`, { status: response.status });
    }
    const parsed = schema.safeParse(text === '' ? {} : json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new DockhandError('bad_response', `Unexpected answer from the server to ${method} ${path}: ${issue?.message ?? 'invalid'}`, {
        field: issue ? formatFieldPath(issue.path) : undefined,
      });
    }
    return parsed.data;
  }
}

/** "acme/shop" stays two path segments, each encoded. */
function repoPath(repo: string): string {
  return repo.split('/').map(encodeURIComponent).join('/');
}

const Me = z.object({ name: z.string(), role: z.enum(['user', 'admin']) });
const SIGN_IN_HINT = 'Run "Dockhand: Sign in" with a current token (dockhand token create --user <you> on the server).';

/** fetch's "fetch failed" says nothing; its cause says what happened (ECONNREFUSED, ENOTFOUND, a timeout). */
function networkReason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (error.name === 'TimeoutError' || error.name === 'AbortError') return 'no answer in time';
  const cause: unknown = Reflect.get(error, 'cause');
  const code = cause instanceof Error ? Reflect.get(cause, 'code') : undefined;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND') return 'unknown host';
  if (typeof code === 'string') return code;
  return cause instanceof Error ? cause.message : error.message;
}

function parseJson(text: string): unknown {
  try {
    return text === '' ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

function statusCode(status: number): DockhandError['code'] {
  if (status === 401) return 'unauthenticated';
  if (status === 403) return 'forbidden';
  if (status === 404) return 'not_found';
  if (status === 409) return 'conflict';
  if (status === 429) return 'rate_limited';
  if (status >= 400 && status < 500) return 'bad_request';
  return 'internal';
}
