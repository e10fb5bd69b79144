// 1,000 requests at once on fresh connections against expensive routes, each abandoned after 4 s
// (a client that has gone); loopback only; ends by itself within 60 s. Prints the answers' status
// counts as one JSON line. Run by `burst.ts` in a process of its own, so neither the server's
// event loop nor the probe's carries the clients' sockets.
import { request } from 'node:http';

const [url, token, repo, countText] = process.argv.slice(2);
const target = new URL(url);
const count = Number(countText ?? 1000);
const routes = [
  ['GET', '/v1/metrics'], ['GET', '/v1/tasks?limit=100'], ['GET', `/v1/repos/${repo}/pulls/1`],
  ['POST', '/v1/tasks', JSON.stringify({ ticket: { kind: 'text', title: 'load' }, context: { repo, baseSha: 'f'.repeat(40) } })],
];
setTimeout(() => process.exit(0), 60_000).unref();
const counts = {};
const started = Date.now();
await Promise.all(Array.from({ length: count }, (_, index) => new Promise((done) => {
  const [method, path, body] = routes[index % routes.length];
  const headers = { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) };
  const req = request({ host: target.hostname, port: target.port, method, path, agent: false, headers }, (res) => {
    res.resume();
    res.on('end', () => { counts[res.statusCode] = (counts[res.statusCode] ?? 0) + 1; done(); });
  });
  req.setTimeout(4_000, () => req.destroy());
  req.on('error', () => { counts.gone = (counts.gone ?? 0) + 1; done(); });
  req.end(body);
})));
counts.ms = Date.now() - started;
process.stdout.write(`${JSON.stringify(counts)}\n`);
