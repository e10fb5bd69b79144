import WebSocket from 'ws';
import { z } from 'zod';
import { ErrorBody, ServerFrame, type TaskEvent } from '@dockhand/protocol';
import { DockhandError } from '../errors';

/** A small HTTP + WebSocket client of the fleet API for the CLI. Every response is parsed. */
export class ApiClient {
  constructor(readonly baseUrl: string, private readonly token: string | undefined) {}

  async request<T>(method: string, path: string, schema: z.ZodType<T>, body?: unknown, extraHeaders: Record<string, string> = {}): Promise<T> {
    const headers: Record<string, string> = { ...extraHeaders };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response | undefined;
    // A GET is safe to repeat: a kept-alive connection the server closed as it was reused, or a
    // connect that timed out on a loaded host, should not end a `repo check` that polls for minutes.
    for (let attempt = 1; !response; attempt++) {
      try {
        response = await fetch(new URL(path, this.baseUrl), { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      } catch (error) {
        if (method === 'GET' && attempt < 3) {
          await new Promise((done) => setTimeout(done, 1000 * attempt));
          continue;
        }
        const reason = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message})` : '';
        throw new DockhandError('internal', `cannot reach the Dockhand server at ${this.baseUrl}${reason}`, { hint: 'start it with `dockhand serve` or pass --server', cause: error });
      }
    }
    const text = await response.text();
    const json: unknown = text ? JSON.parse(text) : undefined;
    if (!response.ok) {
      const parsed = ErrorBody.safeParse(json);
      if (parsed.success) {
        const { code, message, field, hint } = parsed.data.error;
        throw new DockhandError(code, message, { ...(field ? { field } : {}), ...(hint ? { hint } : {}) });
      }
      throw new DockhandError('internal', `${method} ${path} answered ${response.status}`);
    }
    return schema.parse(json);
  }

  /** Streams a task's events (replay after `after`, then live) until `stop` returns true. */
  streamEvents(taskId: string, after: number, onEvent: (event: TaskEvent) => boolean | void): Promise<number> {
    const url = new URL(`/v1/tasks/${encodeURIComponent(taskId)}/events?after=${after}`, this.baseUrl);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    return new Promise((resolve, reject) => {
      let last = after;
      const ws = new WebSocket(url, ['dockhand.v1'], this.token ? { headers: { authorization: `Bearer ${this.token}` } } : {});
      ws.on('message', (data) => {
        const frame = ServerFrame.parse(JSON.parse(data.toString()));
        if (frame.kind === 'event') {
          last = frame.event.seq;
          if (onEvent(frame.event) === true) {
            ws.close();
            resolve(last);
          }
        } else if (frame.kind === 'resync') {
          ws.close();
          // Fell behind: reconnect from what we processed.
          this.streamEvents(taskId, frame.lastDeliveredSeq, onEvent).then(resolve, reject);
        } else if (frame.kind === 'error') {
          reject(new DockhandError(frame.error.code, frame.error.message));
        }
      });
      ws.on('unexpected-response', (_request, response) => reject(new DockhandError('internal', `event stream refused: HTTP ${response.statusCode}`)));
      ws.on('error', reject);
    });
  }
}
