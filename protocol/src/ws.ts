import { z } from 'zod';
import { ErrorBody } from './errors';
import { TaskEvent } from './events';

/** Frames the server sends on `WS /v1/tasks/:id/events?after=SEQ`. */
export const ServerFrame = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('event'), event: TaskEvent }),
  /** Replay done; everything after this is live. */
  z.object({ kind: z.literal('live'), lastSeq: z.number().int().min(0) }),
  /** The subscriber fell behind; it must reconnect with `after` = the last seq it processed. */
  z.object({ kind: z.literal('resync'), lastDeliveredSeq: z.number().int().min(0) }),
  z.object({ kind: z.literal('error'), ...ErrorBody.shape }),
]);
export type ServerFrame = z.infer<typeof ServerFrame>;

/** Frames a client may send; the socket is otherwise read-only. */
export const ClientFrame = z.discriminatedUnion('kind', [z.object({ kind: z.literal('ping') })]);
export type ClientFrame = z.infer<typeof ClientFrame>;
