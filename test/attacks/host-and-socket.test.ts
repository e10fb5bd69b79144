import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { CreateTaskResponse, ServerFrame } from '@dockhand/protocol';
import { EventLog } from '../../server/src/store/hub';
import { startAttackFleet, type AttackFleet } from './support/attack-fleet';
import { FIXTURE, insist } from './support/case-kit';
import { writeReportPart } from './support/report';

/*
 * Issue #23 items 1, 3 and 10 against `dockhand serve` on a real port (gVisor, SQLite, local forge):
 *
 * - A repository's `.dockhand/setup.sh` (run by the snapshot build under runsc-egress) connects
 *   to listeners this test opens on every address of this machine (0.0.0.0: the bridge gateways
 *   172.17.0.1 and the build network's, eth0, loopback), directly and through the allowlist
 *   proxy (CONNECT to IP literals and to `localhost`, which its policy.yml lists and the fleet's
 *   admin list even allows). Every connection a listener accepts is an escape. No traffic goes
 *   to any address that is not this machine's own.
 * - An events socket whose token is revoked must get no event after the revoke and be closed
 *   ("token revoked"); one whose token expires is closed at the expiry ("token expired").
 * - The data dir the fleet wrote is 0700, its database and snapshot logs 0600.
 */

const REPO = 'egress-app';
const TITLE = 'Egress probe: nothing to change';
const PORT = 40_000 + Math.floor(Math.random() * 10_000);

let fleet: AttackFleet;
let fixture: string;
const listeners: Server[] = [];
const escapes: string[] = [];
let taskId = '';
let buildLog = '';
const figures = { build_egress_escapes: -1, revoked_socket_events: -1, revoked_socket_closed: false, expired_socket_closed_ms: -1, data_dir_private: false };

/** Every IPv4 address of this machine, idle bridges included (Node's list leaves out docker0 without a carrier). */
function ownAddresses(): string[] {
  const fromKernel = execFileSync('ip', ['-4', '-o', 'addr', 'show'], { encoding: 'utf8' }).split('\n').map((line) => /\sinet (\d+\.\d+\.\d+\.\d+)\//.exec(line)?.[1]);
  const fromNode = Object.values(networkInterfaces()).flatMap((entries) => entries ?? []).filter((entry) => entry.family === 'IPv4').map((entry) => entry.address);
  return [...new Set([...fromKernel, ...fromNode].filter((address): address is string => address !== undefined))];
}

/** The hostile setup: direct TCP to every own address, then CONNECTs through the build's proxy. */
function hostileSetup(addresses: string[]): string {
  return `#!/bin/bash
# The build network's gateway, from the routing table (hex, little-endian).
gw=$(awk '$2=="00000000" {print $3}' /proc/net/route | head -1 | sed 's/../0x& /g' | awk '{printf "%d.%d.%d.%d", $4, $3, $2, $1}')
echo "probe: gateway $gw"
for a in ${addresses.join(' ')} $gw; do
  if timeout 5 bash -c "exec 3<>/dev/tcp/$a/${PORT}" 2>/dev/null; then echo "probe: REACHED $a:${PORT}"; else echo "probe: refused $a:${PORT}"; fi
done
proxy=\${HTTPS_PROXY#http://}; proxy=\${proxy%/}; ph=\${proxy%%:*}; pp=\${proxy##*:}
echo "probe: proxy $ph:$pp"
for t in localhost:443 127.0.0.1:443 ${addresses.map((address) => `${address}:443`).join(' ')} $gw:443; do
  answer=$(timeout 8 bash -c "exec 3<>/dev/tcp/$ph/$pp; printf 'CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n' $t $t >&3; head -c 200 <&3" 2>&1 | head -2 | tr -d '\\r' | tr '\\n' ' ')
  echo "probe: CONNECT $t -> $answer"
done
exit 0
`;
}

function createFixture(addresses: string[]): string {
  const path = mkdtempSync(join(tmpdir(), 'dockhand-egress-app-'));
  const files: Record<string, string> = {
    ...FIXTURE,
    '.dockhand/setup.sh': hostileSetup(addresses),
    // policy.yml is read leniently by the recipe: IP literals and a loopback name reach the build's allowlist request.
    '.dockhand/policy.yml': `allowedEgressHosts: [localhost, 127.0.0.1, ${addresses.join(', ')}]\n`,
  };
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(path, file)), { recursive: true });
    writeFileSync(join(path, file), text);
  }
  const env = { ...process.env, GIT_AUTHOR_NAME: 'Fixture', GIT_AUTHOR_EMAIL: 'fixture@dockhand.invalid', GIT_COMMITTER_NAME: 'Fixture', GIT_COMMITTER_EMAIL: 'fixture@dockhand.invalid' };
  for (const args of [['init', '-q', '-b', 'main'], ['add', '-A'], ['commit', '-q', '-m', 'egress-app']]) execFileSync('git', args, { cwd: path, env });
  return path;
}

async function listen(port: number): Promise<void> {
  const server = createServer((socket) => {
    escapes.push(`${socket.remoteAddress ?? '?'} -> ${socket.localAddress ?? '?'}:${port}`);
    socket.end('escaped\n');
  });
  await new Promise<void>((done, reject) => {
    server.once('error', reject);
    server.listen(port, '0.0.0.0', () => done());
  });
  listeners.push(server);
}

interface Opened {
  ws: WebSocket;
  frames: ServerFrame[];
  closed: Promise<{ code: number; reason: string; at: number }>;
}

function openEvents(taskId: string, token: string): Promise<Opened> {
  const ws = new WebSocket(`${fleet.url.replace(/^http/, 'ws')}/v1/tasks/${taskId}/events`, ['dockhand.v1', `dockhand.bearer.${token}`]);
  const frames: ServerFrame[] = [];
  ws.on('message', (data) => frames.push(ServerFrame.parse(JSON.parse(data.toString()))));
  const closed = new Promise<{ code: number; reason: string; at: number }>((done) => ws.on('close', (code, reason) => done({ code, reason: reason.toString(), at: Date.now() })));
  return new Promise((done, reject) => {
    ws.once('open', () => done({ ws, frames, closed }));
    ws.once('error', reject);
  });
}

const events = (socket: Opened) => socket.frames.filter((frame) => frame.kind === 'event').length;
const within = <T,>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> => Promise.race([promise, new Promise<'timeout'>((done) => setTimeout(() => done('timeout'), ms))]);

beforeAll(async () => {
  // The admin's fleet list allows `localhost`: the proxy must still refuse what it resolves to.
  process.env['DOCKHAND_EGRESS_HOSTS'] = 'localhost';
  await listen(PORT);
  await listen(443);
  fleet = await startAttackFleet({ concurrency: 2 });
  fixture = createFixture(ownAddresses());
  const registered = await fleet.request('POST', '/v1/repos', fleet.tokens.root, { name: REPO, source: fixture });
  if (registered.status !== 201) throw new Error(`registering ${REPO}: ${registered.status} ${registered.body}`);
  fleet.script(TITLE, { description: 'finishes at once; the attack is the repository\u2019s setup.sh', turns: insist('Nothing to change.', 2) });
}, 600_000);

afterAll(async () => {
  writeReportPart({ part: 'host-and-socket', ...figures, escapes: escapes.slice(0, 10) });
  for (const server of listeners) server.close();
  if (fleet) {
    await fleet.close();
    fleet.remove();
  }
  if (fixture) rmSync(fixture, { recursive: true, force: true });
}, 300_000);

describe('the host and the sockets (issue #23 items 1, 3, 10)', () => {
  it('a snapshot build reaches nothing on this machine but its proxy, and the proxy tunnels to no own address', { timeout: 900_000 }, async () => {
    const answer = await fleet.request('POST', '/v1/tasks', fleet.tokens.alice, {
      ticket: { kind: 'issue', id: '1', title: TITLE, body: 'Nothing to change.' },
      context: { repo: REPO, baseSha: execFileSync('git', ['-C', fixture, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim() },
    });
    expect(answer.status, answer.body).toBe(202);
    taskId = CreateTaskResponse.parse(answer.json).id;
    await fleet.waitFor(taskId);
    const logs = join(fleet.dataDir, 'snapshot-logs');
    buildLog = readdirSync(logs)
      .filter((name) => name.endsWith('.log'))
      .map((name) => execFileSync('cat', [join(logs, name)], { encoding: 'utf8' }))
      .join('\n');
    const probes = buildLog.split('\n').filter((line) => line.startsWith('probe:'));
    console.log(probes.join('\n'));
    figures.build_egress_escapes = escapes.length;
    expect(probes.length, 'the hostile setup.sh ran in the build').toBeGreaterThan(4);
    expect(escapes).toEqual([]);
    expect(probes.filter((line) => /REACHED|200 Connection/.test(line))).toEqual([]);
  });

  it('a revoked token\u2019s socket gets no event after the revoke and is closed saying so', { timeout: 120_000 }, async () => {
    const { token, info } = await fleet.server.fleet.store.createToken('alice', 'socket to revoke');
    const socket = await openEvents(taskId, token);
    const live = () => socket.frames.some((frame) => frame.kind === 'live');
    if (!live()) await within(new Promise<void>((done) => socket.ws.on('message', () => live() && done())), 10_000);
    const revoked = await fleet.request('DELETE', `/v1/tokens/${info.id}`, fleet.tokens.root);
    expect(revoked.status, revoked.body).toBe(200);
    const before = events(socket);
    // New events on the task after the revoke, through the server's own event log and hub.
    const log = new EventLog(fleet.server.fleet.store, fleet.server.fleet.hub);
    for (let i = 0; i < 3; i++) await log.append(taskId, { type: 'user.message', data: { from: 'alice', text: `after the revoke ${i}` } });
    const closed = await within(socket.closed, 10_000);
    figures.revoked_socket_events = events(socket) - before;
    figures.revoked_socket_closed = closed !== 'timeout';
    expect(figures.revoked_socket_events).toBe(0);
    expect(closed).toMatchObject({ code: 4401, reason: 'token revoked' });
  });

  it('an expiring token\u2019s socket is closed at the expiry', { timeout: 60_000 }, async () => {
    const expiresAt = new Date(Date.now() + 3_000).toISOString();
    const { token } = await fleet.server.fleet.store.createToken('alice', { label: 'expiring socket', expiresAt });
    const socket = await openEvents(taskId, token);
    const closed = await within(socket.closed, 15_000);
    expect(closed).not.toBe('timeout');
    if (closed === 'timeout') return;
    figures.expired_socket_closed_ms = closed.at - Date.parse(expiresAt);
    expect(closed.reason).toBe('token expired');
    expect(figures.expired_socket_closed_ms).toBeGreaterThanOrEqual(0);
    expect(figures.expired_socket_closed_ms).toBeLessThan(2_000);
  });

  it('the data dir is the server user\u2019s only: dir 0700, database and build logs 0600', () => {
    const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);
    const logs = join(fleet.dataDir, 'snapshot-logs');
    const found = {
      dataDir: mode(fleet.dataDir),
      database: mode(join(fleet.dataDir, 'dockhand.db')),
      wal: mode(join(fleet.dataDir, 'dockhand.db-wal')),
      logs: readdirSync(logs).map((name) => `${name.slice(-12)} ${mode(join(logs, name))}`),
    };
    figures.data_dir_private = found.dataDir === '700' && found.database === '600' && found.wal === '600' && found.logs.every((entry) => entry.endsWith(' 600'));
    expect(found).toMatchObject({ dataDir: '700', database: '600', wal: '600' });
    expect(found.logs.filter((entry) => !entry.endsWith(' 600'))).toEqual([]);
  });
});
