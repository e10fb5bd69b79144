// Time from spawning `dockhand serve` to "Server listening" and to /healthz, per start-up mode,
// interleaved so the modes share the machine's load; each start's log lines with their arrival
// time; last line: JSON with the median per mode. Empty data dir per run, replay model (not
// contacted at start-up).
//   node bench/serve-start.mjs [modes] [rounds]   modes: comma-separated `tsx` or bundle paths
//   e.g. node bench/serve-start.mjs server/dist/cli.js,tsx 3   (build the bundle first: npm run build:server)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const modes = (process.argv[2] ?? 'server/dist/cli.js,tsx').split(',');
const rounds = Number(process.argv[3] ?? 3);
const basePort = 19000 + Math.floor(Math.random() * 500);
const results = new Map(modes.map((mode) => [mode, []]));

let run = 0;
for (let round = 0; round < rounds; round++) {
  for (const mode of modes) {
    const port = basePort + run++;
    const dataDir = mkdtempSync(join(tmpdir(), 'dockhand-serve-start-'));
    const args = mode === 'tsx' ? ['--import', 'tsx', 'server/src/cli/bin.ts', 'serve'] : [mode, 'serve'];
    const started = performance.now();
    const env = { ...process.env, DOCKHAND_DATA_DIR: dataDir, DOCKHAND_PORT: String(port), DOCKHAND_REPLAY_SESSION: 'start', DOCKHAND_MODEL_BASE_URL: 'http://127.0.0.1:9', DOCKHAND_LOG_LEVEL: 'info' };
    const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const lines = [];
    let listening;
    const onData = (chunk) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        const at = (performance.now() - started) / 1000;
        let message = line;
        try {
          message = String(JSON.parse(line).msg);
        } catch {}
        lines.push(`  ${at.toFixed(2)} s  ${message.slice(0, 110)}`);
        if (listening === undefined && /listening/.test(message)) listening = at;
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    let healthz;
    while (performance.now() - started < 600_000 && child.exitCode === null) {
      if (await fetch(`http://127.0.0.1:${port}/healthz`).then((response) => response.ok, () => false)) {
        healthz = (performance.now() - started) / 1000;
        break;
      }
      await new Promise((done) => setTimeout(done, 50));
    }
    child.kill('SIGTERM');
    await new Promise((done) => child.once('exit', done));
    rmSync(dataDir, { recursive: true, force: true });
    results.get(mode).push(listening ?? Number.NaN);
    console.log(`${mode}: listening ${listening?.toFixed(2)} s, /healthz ${healthz?.toFixed(2)} s, load ${loadavg()[0].toFixed(1)}`);
    for (const line of lines) console.log(line);
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
console.log(JSON.stringify(Object.fromEntries([...results].map(([mode, values]) => [mode, { median_listening_s: Number(median(values).toFixed(2)), runs: values.map((value) => Number(value.toFixed(2))) }]))));
