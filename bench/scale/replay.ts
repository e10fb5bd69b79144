/**
 * The replay model server of `npm run bench:scale` in a process of its own, so that streaming
 * ~15 model calls a second does not share an event loop with the orchestrator's 300 WebSockets —
 * whose clock measures the fan-out. Serves SCALE_CASSETTE as session `scale` with the input-token
 * limit REPLAY_TPM; prints `{"url": …}` once listening, and `{"rateLimited": n}` for every line
 * read on stdin.
 */
import { createInterface } from 'node:readline';
import { startReplayServer } from '../../server/src/model/replay/server';
import { SCALE_CASSETTE } from './cassette';

const replay = await startReplayServer({
  limits: { inputTokensPerMinute: Number(process.env.REPLAY_TPM ?? 3_000_000) },
  // Each answer takes 0.5–1.5 × the mean, as real ones vary (and tasks do not move in lockstep).
  latencyMs: () => Number(process.env.REPLAY_LATENCY_MS ?? 0) * (0.5 + Math.random()),
});
replay.addCassette('scale', SCALE_CASSETTE);
process.stdout.write(`${JSON.stringify({ url: replay.url })}\n`);
createInterface({ input: process.stdin }).on('line', () => process.stdout.write(`${JSON.stringify({ rateLimited: replay.rateLimited() })}\n`));
process.once('SIGTERM', () => void replay.close().then(() => process.exit(0)));
