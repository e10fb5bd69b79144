import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuildNetwork } from '../../server/src/sandbox/build-network';
import { testPythonIndex, type TestPythonIndex } from '../../server/src/sandbox/pip-index.test-support';
import { registryHarness, type RegistryHarness } from '../../server/src/sandbox/private-registry-harness.test-support';
import { PRIVATE_PACKAGE, testRegistry, type TestRegistry } from '../../server/src/sandbox/private-registry.test-support';
import type { Snapshot } from '../../server/src/sandbox/snapshots';
import { writeReportPart } from './support/report';

/*
 * Issue 31 item 1 as an attacker plays it: two real snapshot builds at the same time on the real
 * build network (runsc-egress), each with its proxy and registry front on the gateway.
 *
 * Repository A registers a private npm scope (@acme, Verdaccio with `$authenticated`) and a Python
 * index (nginx with auth_basic), each with its secret. A's own postinstall waits until the test
 * says go, so A's listeners are open the whole time B builds. Repository B's `.dockhand/setup.sh`
 * then asks every port listening on the gateway (read from this host's sockets when B is made)
 * for A's package document, its tarball, A's pip page, and a CONNECT tunnel; each 200 is a
 * cross-build read. Both registries sit behind a recording relay on loopback, so every request
 * that reached them with A's credential is counted, and B's are told apart by B's user agent.
 * A's build log's audit must count exactly the requests the registries got with A's secrets.
 */

const PROBE_AGENT = 'cross-build-probe';
const GO_PATH = '/@acme%2fcross-build-go';

interface Recorded {
  method: string;
  path: string;
  authorization: string;
  agent: string;
}

interface Recorder {
  url: string;
  requests: Recorded[];
  go: boolean;
  close(): Promise<void>;
}

/**
 * A relay on loopback in front of a test registry that records each request (the credential
 * among its headers) and points the registry's absolute links at itself. It answers GO_PATH on its
 * own: 404 until the test sets `go`.
 */
async function recordingRelay(upstream: string): Promise<Recorder> {
  const origin = new URL(upstream).origin;
  const recorder: Recorder = { url: '', requests: [], go: false, close: async () => undefined };
  const server: Server = createServer((incoming, response) => {
    const path = incoming.url ?? '/';
    recorder.requests.push({ method: incoming.method ?? '', path, authorization: String(incoming.headers.authorization ?? ''), agent: String(incoming.headers['user-agent'] ?? '') });
    if (path === GO_PATH) {
      response.writeHead(recorder.go ? 200 : 404, { 'content-type': 'application/json' }).end(recorder.go ? '{"go":true}' : '{"error":"not yet"}');
      return;
    }
    const headers: IncomingHttpHeaders = { ...incoming.headers };
    delete headers['accept-encoding'];
    const forward = request(`${origin}${path}`, { method: incoming.method ?? 'GET', headers }, (answer) => {
      const type = String(answer.headers['content-type'] ?? '');
      if (!/json|html/.test(type)) {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
        return;
      }
      const chunks: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => chunks.push(chunk));
      answer.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8').split(`${origin}/`).join(recorder.url);
        const { 'content-length': _length, 'transfer-encoding': _encoding, ...rest } = answer.headers;
        response.writeHead(answer.statusCode ?? 502, { ...rest, 'content-length': Buffer.byteLength(body) }).end(body);
      });
    });
    forward.on('error', (error) => response.writeHead(502).end(error.message));
    incoming.pipe(forward);
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', () => done()));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('relay not listening');
  recorder.url = `http://127.0.0.1:${address.port}/`;
  recorder.close = () => new Promise<void>((done) => server.close(() => done()));
  return recorder;
}

/** Ports listening on `address` on this host (its IPv4 sockets in LISTEN state). */
function listeningPorts(address: string): number[] {
  const hex = address.split('.').map((part) => Number(part).toString(16).padStart(2, '0')).reverse().join('').toUpperCase();
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields[3] === '0A' && fields[1]?.split(':')[0] === hex)
    .map((fields) => parseInt(fields[1]?.split(':')[1] ?? '0', 16))
    .sort((a, b) => a - b);
}

/** A's postinstall: waits (polling its own front) until the test says go, at most 10 minutes. */
const WAIT_FOR_GO = `const http = require('http');
const url = process.env.npm_config_registry.replace(/\\/?$/, '/') + '${GO_PATH.slice(1)}';
const deadline = Date.now() + 600000;
const again = () => (Date.now() > deadline ? (console.log('a: no go before the deadline'), process.exit(0)) : setTimeout(poll, 1000));
function poll() {
  http.get(url, { headers: { 'user-agent': 'cross-build-a-wait' } }, (res) => {
    res.resume();
    if (res.statusCode === 200) { console.log('a: go'); process.exit(0); }
    again();
  }).on('error', again);
}
poll();
`;

/** B's setup.sh: every port given, asked for A's private package, tarball, pip page and a tunnel; its own ports skipped. */
function probingSetup(ports: number[]): string {
  return `#!/bin/bash
exec python3 - <<'PY'
import os, socket

def gateway():
    for line in open('/proc/net/route').read().splitlines()[1:]:
        fields = line.split()
        if fields[1] == '00000000':
            return socket.inet_ntoa(bytes.fromhex(fields[2])[::-1])

def port_of(url):
    return (url or '').rstrip('/').rsplit(':', 1)[-1]

def ask(port, text):
    try:
        s = socket.create_connection((gw, int(port)), timeout=10)
        s.sendall(text.encode())
        data = b''
        while b'\\n' not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        s.close()
        return data.split(b'\\n')[0].decode('latin1').strip() or 'closed'
    except OSError as error:
        return 'refused ' + type(error).__name__

gw = gateway()
front, proxy = port_of(os.environ.get('npm_config_registry')), port_of(os.environ.get('HTTPS_PROXY'))
print('probe: gateway', gw, 'own front', front, 'own proxy', proxy, flush=True)
for port in [${ports.join(', ')}]:
    if str(port) in (front, proxy):
        print('probe:', port, 'own', flush=True)
        continue
    for path in ['/@acme%2fprivate-utils', '/@acme/private-utils/-/private-utils-1.0.0.tgz', '/-/pip/simple/acme-private-utils/']:
        print('probe:', port, 'GET', path, '->', ask(port, f'GET {path} HTTP/1.0\\r\\nHost: {gw}:{port}\\r\\nUser-Agent: ${PROBE_AGENT}\\r\\n\\r\\n'), flush=True)
    print('probe:', port, 'CONNECT ->', ask(port, 'CONNECT registry.npmjs.org:443 HTTP/1.1\\r\\nHost: registry.npmjs.org:443\\r\\nUser-Agent: ${PROBE_AGENT}\\r\\n\\r\\n'), flush=True)
print('probe: own proxy ->', ask(proxy, 'GET http://example.invalid/ HTTP/1.0\\r\\n\\r\\n'), flush=True)
PY
`;
}

let registry: TestRegistry;
let index: TestPythonIndex;
let npmRelay: Recorder;
let pipRelay: Recorder;
let harness: RegistryHarness;
let gateway = '';
const figures = {
  cross_build_front_reads: -1,
  cross_build_proxy_tunnels: -1,
  cross_build_probes: 0,
  cross_build_ports: 0,
  upstream_requests_with_a_secret_from_b: -1,
  a_audit_counts_only_a: false,
  b_ran_while_a_listened: false,
};

beforeAll(async () => {
  registry = await testRegistry();
  index = await testPythonIndex();
  npmRelay = await recordingRelay(registry.url);
  pipRelay = await recordingRelay(index.url);
  harness = await registryHarness('cross-build', { privateRegistries: [npmRelay.url, pipRelay.url] });
  gateway = (await ensureBuildNetwork(new Docker())).gateway;
}, 600_000);

afterAll(async () => {
  writeReportPart({ part: 'cross-build', ...figures });
  if (npmRelay) npmRelay.go = true;
  await harness?.close();
  await npmRelay?.close();
  await pipRelay?.close();
}, 300_000);

/** Repository A: @acme/private-utils from the npm scope and acme-private-utils from the Python index; its postinstall waits for go. */
async function repositoryA(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'dockhand-cross-build-a-'));
  harness.cleanup.push(dir);
  const manifest = { name: 'cross-build-a', version: '1.0.0', private: true, dependencies: { [PRIVATE_PACKAGE]: '1.0.0' }, scripts: { postinstall: 'node wait-for-go.js', test: 'node --test' } };
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  writeFileSync(join(dir, 'developer.npmrc'), `@acme:registry=${registry.url}\n//${new URL(registry.url).host}/:_authToken=${registry.token}\n`);
  await promisify(execFile)('npm', ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: dir, env: { ...process.env, npm_config_userconfig: join(dir, 'developer.npmrc') } });
  return harness.repo('acme/cross-a', {
    'package.json': readFileSync(join(dir, 'package.json'), 'utf8'),
    'package-lock.json': readFileSync(join(dir, 'package-lock.json'), 'utf8'),
    'wait-for-go.js': WAIT_FOR_GO,
    'requirements.txt': 'acme-private-utils==1.0.0\n',
    '.gitignore': 'node_modules/\n.venv/\n',
    '.dockhand/environment.yml': `registries: [{ scope: "@acme", url: "${npmRelay.url}", token: NPM_ACME }]\npythonIndex: { url: "${pipRelay.url}simple/", username: ${index.username}, token: PYPI_ACME }\n`,
  });
}

/** Repository B: nothing to install; its setup.sh is the attack. */
function repositoryB(ports: number[]): string {
  const manifest = { name: 'cross-build-b', version: '1.0.0', private: true, scripts: { test: 'node --test' } };
  return harness.repo('mallory/cross-b', {
    'package.json': `${JSON.stringify(manifest, null, 2)}\n`,
    'package-lock.json': `${JSON.stringify({ name: 'cross-build-b', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'cross-build-b', version: '1.0.0' } } }, null, 2)}\n`,
    '.dockhand/setup.sh': probingSetup(ports),
  });
}

async function until(condition: () => boolean, what: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 500));
  }
}

/** `NPM_ACME (registry front for @acme: 3 requests upstream)` → 3. */
function audited(log: string, secret: string): number {
  const line = /^# repository secrets used \(names only\): (.*)$/m.exec(log)?.[1] ?? '';
  return Number(new RegExp(`${secret} \\(registry front for [^:]+: (\\d+) requests? upstream\\)`).exec(line)?.[1] ?? -1);
}

describe('a build cannot use another build\u2019s registry front or proxy (issue 31 item 1)', () => {
  it('B probes every port on the gateway while A builds: no 200 from A\u2019s front or proxy, A\u2019s registries see A\u2019s requests only, A\u2019s audit counts them exactly', { timeout: 1_200_000 }, async () => {
    await harness.secrets.set('acme/cross-a', 'NPM_ACME', registry.token, 'alice');
    await harness.secrets.set('acme/cross-a', 'PYPI_ACME', index.token, 'alice');
    const shaA = await repositoryA();
    const buildA = harness.build('acme/cross-a', shaA);
    const failedA = buildA.then(() => undefined, (error: unknown) => error);
    // A is in its postinstall, its front and proxy listening, when it first asks for go.
    await Promise.race([until(() => npmRelay.requests.some((entry) => entry.path === GO_PATH), 'A to wait in its postinstall', 900_000), failedA.then((error) => { if (error) throw error; })]);
    const ports = listeningPorts(gateway);
    figures.cross_build_ports = ports.length;
    console.log(JSON.stringify({ gateway, ports_listening_while_a_waits: ports }));
    expect(ports.length, 'A\u2019s proxy and front listen on the gateway').toBeGreaterThanOrEqual(2);
    const b: Snapshot = await harness.build('mallory/cross-b', repositoryB(ports));
    // A's listeners were open through all of B's build: still listening, A still waiting.
    const stillOpen = listeningPorts(gateway);
    figures.b_ran_while_a_listened = ports.every((port) => stillOpen.includes(port)) && !npmRelay.go;
    npmRelay.go = true;
    const a = await buildA;
    const logA = harness.buildLog(a);
    const logB = harness.buildLog(b);
    const probes = logB.split('\n').filter((line) => /^probe: \d+ (GET|CONNECT)/.test(line));
    console.log(logB.split('\n').filter((line) => line.startsWith('probe:')).join('\n'));
    figures.cross_build_probes = probes.length;
    figures.cross_build_front_reads = probes.filter((line) => / GET .* -> HTTP\/1\.[01] 200/.test(line)).length;
    figures.cross_build_proxy_tunnels = probes.filter((line) => / CONNECT -> HTTP\/1\.[01] 200/.test(line)).length;
    const bearer = `Bearer ${registry.token}`;
    const basic = `Basic ${Buffer.from(`${index.username}:${index.token}`).toString('base64')}`;
    const withA = (relay: Recorder, credential: string) => relay.requests.filter((entry) => entry.authorization === credential);
    const fromB = (entries: Recorded[]) => entries.filter((entry) => entry.agent.includes(PROBE_AGENT));
    const ownA = (entries: Recorded[]) => entries.filter((entry) => !entry.agent.includes(PROBE_AGENT));
    figures.upstream_requests_with_a_secret_from_b = fromB([...withA(npmRelay, bearer), ...withA(pipRelay, basic)]).length;
    const auditNpm = audited(logA, 'NPM_ACME');
    const auditPip = audited(logA, 'PYPI_ACME');
    console.log(JSON.stringify({ a_audit: { NPM_ACME: auditNpm, PYPI_ACME: auditPip }, upstream_with_a_secret: { npm: withA(npmRelay, bearer).length, pip: withA(pipRelay, basic).length }, of_them_from_b: figures.upstream_requests_with_a_secret_from_b }));
    // The audit counts A's own requests, all of them and nothing else.
    figures.a_audit_counts_only_a = auditNpm === ownA(withA(npmRelay, bearer)).length && auditPip === ownA(withA(pipRelay, basic)).length;

    expect(figures.b_ran_while_a_listened, 'B built while A\u2019s listeners were open').toBe(true);
    expect(logA).toMatch(/^a: go$/m);
    // Each port was asked 4 ways (B skips its own, which were not listening yet when the list was read).
    expect(probes.length).toBe(ports.length * 4);
    expect(logB, 'B reached its own proxy (the probe works)').toMatch(/^probe: own proxy -> HTTP\/1\.1 403/m);
    expect(figures.cross_build_front_reads).toBe(0);
    expect(figures.cross_build_proxy_tunnels).toBe(0);
    expect(figures.upstream_requests_with_a_secret_from_b).toBe(0);
    // A used both secrets, and its audit counts exactly what its registries got with them.
    expect(auditNpm).toBeGreaterThan(0);
    expect(auditPip).toBeGreaterThan(0);
    expect(figures.a_audit_counts_only_a).toBe(true);
  });
});
