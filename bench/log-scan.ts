/**
 * Cost of scanning every server log line for secrets (log.ts `maskingDestination`): lines per
 * second with the scan and without it, for the lines a server writes most (request completed,
 * task progress with a task id, a git child's stderr) and for lines that hold a secret. The
 * lines go to a destination that drops them, so only the logger's own work is timed. Prints
 * figures, then one JSON line.
 */
import { createLogger } from '../server/src/log';
import { secretFormats } from '../server/src/policy/testing/secret-formats';

const LINES = Number(process.env.LOG_BENCH_LINES ?? 50_000);

type Write = (logger: ReturnType<typeof createLogger>, i: number) => void;

const formats = secretFormats(11).map((format) => format.make().line);

const mixes: Record<string, Write> = {
  // What a busy server writes: Fastify's request lines, the scheduler's and runner's task lines.
  typical: (logger, i) => {
    if (i % 3 === 0) logger.info({ reqId: `req-${i.toString(36)}`, res: { statusCode: 200 }, responseTime: 3.2 }, 'request completed');
    else if (i % 3 === 1) logger.info({ taskId: `t_01JD${i.toString(36).padStart(22, '0').toUpperCase()}`, state: 'running', turn: i % 40 }, 'task state');
    else logger.warn({ taskId: 't_01JDXYZ', repo: 'acme/shop', stderr: `fatal: could not read from remote repository (attempt ${i % 5})` }, 'git child failed');
  },
  // Every line holds a secret (worst case: each is parsed, masked and written again).
  secrets: (logger, i) => logger.warn({ taskId: 't_01JDXYZ', stderr: formats[i % formats.length] }, 'tool output'),
};

function rate(scan: boolean, write: Write): number {
  let bytes = 0;
  const logger = createLogger({ scan, secrets: ['push-token-known-at-start'], destination: { write: (line: string) => { bytes += line.length; } } });
  for (let i = 0; i < 2_000; i += 1) write(logger, i); // warm-up
  const start = process.hrtime.bigint();
  for (let i = 0; i < LINES; i += 1) write(logger, i);
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  if (bytes === 0) throw new Error('nothing was written');
  return Math.round(LINES / seconds);
}

const result: Record<string, number> = { lines: LINES };
for (const [name, write] of Object.entries(mixes)) {
  const plain = rate(false, write);
  const scanned = rate(true, write);
  result[`${name}_lines_per_s_unscanned`] = plain;
  result[`${name}_lines_per_s_scanned`] = scanned;
  result[`${name}_us_per_line_added`] = Math.round((1e6 / scanned - 1e6 / plain) * 100) / 100;
  console.log(`${name.padEnd(8)} unscanned ${plain.toLocaleString()} lines/s, scanned ${scanned.toLocaleString()} lines/s (+${result[`${name}_us_per_line_added`]} µs a line)`);
}
console.log(JSON.stringify(result));
