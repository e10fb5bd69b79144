import { parentPort } from 'node:worker_threads';
import { POLICY_JOBS, type PolicyJobName } from './jobs';

/**
 * The policy worker thread: runs `POLICY_JOBS` by name for `pool.ts`. Loaded as its own module
 * under tsx, and as the server bundle itself (which imports this when it starts in a worker).
 */
interface Request {
  id: number;
  name: PolicyJobName;
  args: unknown[];
}

if (parentPort) {
  const port = parentPort;
  port.on('message', (request: Request) => {
    try {
      const job = POLICY_JOBS[request.name] as (...args: unknown[]) => unknown;
      port.postMessage({ id: request.id, ok: true, value: job(...request.args) });
    } catch (error) {
      port.postMessage({ id: request.id, ok: false, error: { message: error instanceof Error ? error.message : String(error), stack: error instanceof Error ? error.stack : undefined } });
    }
  });
}
