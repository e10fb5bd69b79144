import WebSocket from 'ws';
import type { Task } from '@dockhand/protocol';
import type { AttackFleet } from './attack-fleet';

/*
 * Cross-user checks: bob (a user) on every route of the OpenAPI document that names a task, with
 * the ids of alice's tasks and approvals and bodies that would act on them (approve, steer,
 * interrupt, decide), and on the events WebSocket by every way a token can come. Any 2xx, any
 * answer that carries her task's title, summary or name, or any event frame is a leak; her tasks
 * must be in the state they were in. Lists (tasks, approvals, repositories, metrics, tickets)
 * must hold nothing of hers, nor of a repository bob may not submit to.
 */

export interface CrossUserResult {
  checks: number;
  leaks: string[];
}

const BODIES: Record<string, unknown> = {
  review: { action: 'approve' },
  messages: { text: 'bob says: push it' },
  interrupt: undefined,
  approvals: { decision: 'approved', comment: 'bob' },
  check: {},
};

function wsAttempt(url: string, protocols: string[], headers: Record<string, string>): Promise<{ frames: string[]; outcome: string }> {
  return new Promise((resolve) => {
    const frames: string[] = [];
    const socket = new WebSocket(url, protocols, { headers });
    const done = (outcome: string) => {
      clearTimeout(timer);
      socket.removeAllListeners();
      socket.on('error', () => undefined);
      socket.terminate();
      resolve({ frames, outcome });
    };
    const timer = setTimeout(() => done('open for 3 s'), 3_000);
    socket.on('message', (data) => frames.push(data.toString()));
    socket.on('unexpected-response', (_request, response) => done(`http ${response.statusCode}`));
    socket.on('close', (code) => done(`closed ${code}`));
    socket.on('error', (error) => done(`error ${error.message}`));
  });
}

export async function crossUserChecks(fleet: AttackFleet, options: { repo: string; baseSha: string }): Promise<CrossUserResult> {
  const result: CrossUserResult = { checks: 0, leaks: [] };
  const { store } = fleet.server.fleet;
  const { bob } = fleet.tokens;
  const mine = (await store.listTasks({ owner: 'alice', limit: 200 })).tasks;
  // One task of hers in each state reached (review, failed, PR open, …).
  const byState = new Map<string, Task>();
  for (const task of mine) if (!byState.has(task.state)) byState.set(task.state, task);
  const targets = [...byState.values()];
  if (targets.length === 0) return { checks: 0, leaks: ['alice has no tasks to attack'] };
  const secretsOf = (task: Task) => [task.ticket.title, 'alice', ...(task.prUrl ? [task.prUrl] : [])];
  const docs: unknown = await fetch(`${fleet.url}/docs/json`).then((response) => response.json());
  const paths = typeof docs === 'object' && docs !== null && 'paths' in docs && typeof docs.paths === 'object' && docs.paths !== null ? docs.paths : {};

  // An admin's token made without the admin scope acts as a plain user: it must get no more of alice's than bob.
  const rootWithoutAdmin = (await store.createToken('root', { label: 'cross-user: admin without the admin scope', scopes: ['read', 'submit', 'review'] })).token;
  const check = async (label: string, method: string, path: string, body: unknown, forbidden: string[], token = bob) => {
    result.checks += 1;
    const answer = await fleet.request(method, path, token, body);
    if (answer.status < 400) result.leaks.push(`${label}: ${method} ${path} answered ${answer.status}`);
    const carried = forbidden.find((text) => answer.body.includes(text));
    if (carried) result.leaks.push(`${label}: ${method} ${path} carries ${JSON.stringify(carried)}`);
  };

  for (const task of targets) {
    const approvals = await store.listApprovals(task.id);
    const approvalId = approvals[0]?.id ?? 'ap_none';
    for (const [template, item] of Object.entries(paths)) {
      if (!template.includes('{id}') || typeof item !== 'object' || item === null) continue;
      for (const method of Object.keys(item).filter((name) => ['get', 'post', 'delete', 'put', 'patch'].includes(name))) {
        if (!template.startsWith('/v1/tasks/')) continue;
        const path = template.replace('{id}', task.id).replace('{approvalId}', approvalId) + (template.endsWith('/files') ? '?path=src%2Fgreet.js' : '');
        const action = template.split('/').filter((part) => !part.startsWith('{')).at(-1) ?? '';
        await check(`task ${task.state}`, method.toUpperCase(), path, method === 'get' ? undefined : BODIES[action] ?? {}, secretsOf(task));
        await check(`task ${task.state} (admin token without the admin scope)`, method.toUpperCase(), path, method === 'get' ? undefined : BODIES[action] ?? {}, secretsOf(task), rootWithoutAdmin);
      }
    }
    const after = await store.getTask(task.id);
    if (after?.state !== task.state) result.leaks.push(`bob moved alice's task ${task.id} from ${task.state} to ${after?.state}`);

    // The events WebSocket: header, subprotocol and query token; no frame may arrive.
    const wsUrl = `${fleet.url.replace(/^http/, 'ws')}/v1/tasks/${task.id}/events`;
    for (const [how, attempt] of [
      ['header', () => wsAttempt(wsUrl, ['dockhand.v1'], { authorization: `Bearer ${bob}` })],
      ['subprotocol', () => wsAttempt(wsUrl, ['dockhand.v1', `dockhand.bearer.${bob}`], {})],
      ['query', () => wsAttempt(`${wsUrl}?token=${bob}`, ['dockhand.v1'], {})],
      ['no token', () => wsAttempt(wsUrl, ['dockhand.v1'], {})],
    ] as const) {
      result.checks += 1;
      const { frames, outcome } = await attempt();
      if (frames.some((frame) => frame.includes('"kind":"event"'))) result.leaks.push(`WebSocket (${how}) on ${task.state} task: ${frames.length} frames`);
      if (outcome === 'open for 3 s') result.leaks.push(`WebSocket (${how}) on ${task.state} task stayed open`);
    }
  }

  // Lists: nothing of alice's tasks, nothing of private-app (bob is not among its submitters).
  const titles = mine.map((task) => task.ticket.title);
  const ids = mine.map((task) => task.id);
  for (const path of ['/v1/tasks', `/v1/tasks?repo=${options.repo}`, '/v1/tasks?state=pr_open', '/v1/approvals', '/v1/metrics', '/metrics', '/v1/repos']) {
    result.checks += 1;
    const answer = await fleet.request('GET', path, bob);
    if (answer.status >= 500) result.leaks.push(`GET ${path}: ${answer.status}`);
    const carried = [...titles, ...ids, 'private-app'].find((text) => answer.body.includes(text));
    if (carried) result.leaks.push(`GET ${path} carries ${JSON.stringify(carried)}`);
    if (path.endsWith('metrics') && /"tasks":[1-9]|dockhand_tasks\{/.test(answer.body)) result.leaks.push(`GET ${path} counts tasks bob did not submit`);
  }
  // Tokens: bob may not list, make or revoke any (alice's stay valid; bob stays a user).
  const aliceTokens = await store.listTokens('alice');
  const aliceIds = aliceTokens.map((token) => token.id);
  for (const [method, path, body, token] of [
    ['GET', '/v1/tokens', undefined, bob], ['GET', '/v1/tokens?user=alice', undefined, bob],
    ['POST', '/v1/tokens', { user: 'bob', role: 'admin', scopes: ['admin'] }, bob], ['POST', '/v1/tokens', { user: 'alice' }, bob],
    ...aliceIds.map((id) => ['DELETE', `/v1/tokens/${id}`, undefined, bob] as const),
    ['GET', '/v1/tokens', undefined, rootWithoutAdmin], ['POST', '/v1/tokens', { user: 'bob', role: 'admin' }, rootWithoutAdmin],
    ...aliceIds.map((id) => ['DELETE', `/v1/tokens/${id}`, undefined, rootWithoutAdmin] as const),
  ] as const) {
    await check('tokens', method, path, body, aliceIds, token);
  }
  if ((await store.getUser('bob'))?.role !== 'user') result.leaks.push('bob became an admin through the token API');
  const stillValid = (await store.listTokens('alice')).filter((token) => !token.revokedAt).length;
  if (stillValid !== aliceTokens.filter((token) => !token.revokedAt).length) result.leaks.push("bob revoked one of alice's tokens");

  for (const [method, path] of [
    ['GET', '/v1/repos/private-app'], ['GET', '/v1/repos/private-app/check'], ['POST', '/v1/repos/private-app/check'],
    ['GET', '/v1/tickets?repo=private-app'], ['GET', `/v1/tickets?repo=${encodeURIComponent(fleet.barePath('private-app'))}`], ['DELETE', `/v1/repos/${options.repo}`],
  ] as const) {
    await check('repository', method, path, method === 'POST' ? {} : undefined, ['README']);
  }
  return result;
}
