// Times `GET <path>` every <ms> for each `<path>@<ms>` given, each on a fresh connection and never
// waiting for the previous answer, until its stdin closes. Prints `{"ready":true}` once it runs,
// then at the end one JSON line `{"<path>": [[sentAt, ms, status], ...]}` (sentAt: epoch ms;
// status 0: no answer within 20 s or a connection error). Run by `burst.ts` in a process of its
// own, so a busy server's loop is what it measures, not its own.
import { request } from 'node:http';

const [url, token, ...targets] = process.argv.slice(2);
const target = new URL(url);
const results = {};
const pending = [];
const timers = [];

function probe(path) {
  const sentAt = Date.now();
  const begun = performance.now();
  return new Promise((resolve) => {
    const req = request({ host: target.hostname, port: target.port, path, agent: false, headers: { authorization: `Bearer ${token}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve([sentAt, Math.round(performance.now() - begun), res.statusCode ?? 0]));
    });
    req.setTimeout(20_000, () => req.destroy());
    req.on('error', () => resolve([sentAt, Math.round(performance.now() - begun), 0]));
    req.end();
  }).then((entry) => void results[path].push(entry));
}

for (const spec of targets) {
  const at = spec.lastIndexOf('@');
  const path = spec.slice(0, at);
  results[path] = [];
  timers.push(setInterval(() => pending.push(probe(path)), Number(spec.slice(at + 1))));
}
process.stdout.write('{"ready":true}\n');
process.stdin.resume();
process.stdin.on('end', async () => {
  for (const timer of timers) clearInterval(timer);
  await Promise.all(pending);
  process.stdout.write(`${JSON.stringify(results)}\n`);
});
