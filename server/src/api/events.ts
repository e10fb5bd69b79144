import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { RawData, WebSocket } from 'ws';
import { z } from 'zod';
import { ClientFrame, TaskEvent, type ServerFrame } from '@dockhand/protocol';
import { DockhandError, asDockhandError, wsCloseCode } from '../errors';
import { loadTaskAsReader, requireUser, tokenFrom } from './auth';
import type { AppDeps } from './deps';

const Params = z.object({ id: z.string().min(1).max(200) });
const Query = z.object({
  after: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(10_000).default(1000),
  token: z.string().optional(),
});

export const DEFAULT_WS_MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
const REPLAY_PAGE = 500;

/** Each event is serialised and encoded once, however many subscribers it goes to. */
const frameCache = new WeakMap<TaskEvent, Buffer>();
function eventFrame(event: TaskEvent): Buffer {
  let frame = frameCache.get(event);
  if (frame === undefined) {
    frame = Buffer.from(JSON.stringify({ kind: 'event', event } satisfies ServerFrame));
    frameCache.set(event, frame);
  }
  return frame;
}

const TEXT = { binary: false } as const;

function sendFrame(socket: WebSocket, frame: ServerFrame): void {
  socket.send(JSON.stringify(frame));
}

function flushed(socket: WebSocket, data: Buffer): Promise<void> {
  return new Promise((resolve) => socket.send(data, TEXT, () => resolve()));
}

/**
 * `WS /v1/tasks/:id/events?after=SEQ`: replay from the store, then live.
 *
 * No gap and no duplicate at the seam: the subscriber is registered with the hub BEFORE the
 * replay query, live events that arrive meanwhile are buffered, and after the replay only the
 * buffered events with a seq above the last replayed one are sent. From then on events go out as
 * they are published. A subscriber whose unsent bytes pass the bound gets `resync` and is closed:
 * the producer (the task) never waits for a socket.
 *
 * `GET` without an upgrade returns the same events as JSON (`{events}`) for scripts and the CLI.
 */
export async function eventRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const maxBuffered = deps.limits?.wsMaxBufferedBytes ?? DEFAULT_WS_MAX_BUFFERED_BYTES;
  const api = app.withTypeProvider<ZodTypeProvider>();

  async function checkOwner(request: FastifyRequest): Promise<void> {
    const params = Params.safeParse(request.params);
    if (!params.success) throw new DockhandError('bad_request', 'task id missing', { field: 'id' });
    // The repo's owners read the log too: they decide the task's policy overrides.
    await loadTaskAsReader(deps.store, deps.repoPolicy, requireUser(request), params.data.id);
  }

  api.route({
    method: 'GET',
    url: '/tasks/:id/events',
    schema: {
      tags: ['events'],
      summary: 'Task events after a seq (JSON), or a WebSocket of replay + live frames',
      params: Params,
      querystring: Query,
      response: { 200: z.object({ events: z.array(TaskEvent) }) },
    },
    preHandler: checkOwner,
    handler: async (request) => {
      const events = await deps.store.listEvents(request.params.id, request.query.after, request.query.limit);
      return { events };
    },
    wsHandler: (socket, request) => {
      const taskId = request.params.id;
      const after = request.query.after;
      const log = request.log.child({ taskId });
      const token = tokenFrom(request);
      // Checked at the upgrade like any request; from then on its revocation or expiry closes the socket.
      if (token && request.tokenInfo) deps.tokenSockets?.watch(socket, token, request.tokenInfo);
      void streamEvents(socket, taskId, after).catch((error: unknown) => {
        const failure = asDockhandError(error);
        log.error({ err: error }, 'event stream failed');
        if (socket.readyState === socket.OPEN) {
          sendFrame(socket, { kind: 'error', ...failure.toBody() });
          socket.close(wsCloseCode(failure.code), failure.code);
        }
      });
    },
  });

  async function streamEvents(socket: WebSocket, taskId: string, after: number): Promise<void> {
    let lastSent = after;
    let replaying = true;
    let closed = false;
    const pending: TaskEvent[] = [];

    const deliver = (event: TaskEvent): void => {
      if (closed || event.seq <= lastSent || socket.readyState !== socket.OPEN) return;
      if (socket.bufferedAmount > maxBuffered) {
        closed = true;
        unsubscribe();
        sendFrame(socket, { kind: 'resync', lastDeliveredSeq: lastSent });
        socket.close(4008, 'resync');
        return;
      }
      socket.send(eventFrame(event), TEXT);
      lastSent = event.seq;
    };
    const unsubscribe = deps.hub.subscribe(taskId, (event) => {
      if (replaying) pending.push(event);
      else deliver(event);
    });
    socket.on('close', () => {
      closed = true;
      unsubscribe();
    });
    socket.on('message', (data) => void answer(data));
    const answer = async (data: RawData): Promise<void> => {
      // Every client frame is a request of its own: its token must still hold.
      if (deps.tokenSockets && !(await deps.tokenSockets.check(socket))) return;
      let parsed: unknown;
      try {
        parsed = JSON.parse(data.toString());
      } catch {
        parsed = undefined;
      }
      if (!ClientFrame.safeParse(parsed).success) {
        sendFrame(socket, { kind: 'error', error: { code: 'bad_request', message: 'unknown frame; only {"kind":"ping"} is accepted', field: 'kind' } });
      }
    };

    // Replay in pages; wait for each page to reach the socket so a long log is not all buffered.
    for (;;) {
      const page = await deps.store.listEvents(taskId, lastSent, REPLAY_PAGE);
      if (closed) return;
      let last: Buffer | undefined;
      for (const event of page) {
        last = eventFrame(event);
        if (event !== page[page.length - 1]) socket.send(last, TEXT);
        lastSent = event.seq;
      }
      if (last !== undefined) await flushed(socket, last);
      if (page.length < REPLAY_PAGE) break;
    }
    if (closed) return;
    replaying = false;
    for (const event of pending.splice(0)) deliver(event);
    if (!closed) sendFrame(socket, { kind: 'live', lastSeq: lastSent });
  }
}
