import type { WebSocket } from 'ws';
import type { ServerFrame } from '@dockhand/protocol';
import { DockhandError, wsCloseCode } from '../errors';
import type { Store, TokenInfo } from '../store/types';

/** How often open sockets' tokens are read again from the store (revocations by another process or replica). */
export const DEFAULT_TOKEN_CHECK_MS = 5_000;
/** setTimeout's largest delay; an expiry further away is re-armed by the periodic check. */
const MAX_TIMER_MS = 2 ** 31 - 1;

interface Watched {
  socket: WebSocket;
  token: string;
  info: TokenInfo;
  timer: NodeJS.Timeout | undefined;
}

/**
 * The tokens of open WebSockets. REST checks a token on every request; a socket is checked once
 * at its upgrade, so without this a revoked or expired token kept streaming events. A socket is
 * closed with an error frame and a close reason that says which: at its token's expiry (a
 * timer), at a revocation in this process (the revoke route calls `revoked`), and when a check
 * finds the token gone: every `checkMs` for all open sockets (a revocation by the CLI, another
 * process or another API replica, SQLite or Postgres alike) and on each client message.
 */
export class TokenSockets {
  private readonly watched = new Set<Watched>();
  private readonly interval: NodeJS.Timeout;

  constructor(
    private readonly store: Pick<Store, 'authenticate'>,
    options: { checkMs?: number } = {},
  ) {
    this.interval = setInterval(() => void this.checkAll(), options.checkMs ?? DEFAULT_TOKEN_CHECK_MS);
    this.interval.unref();
  }

  /** Watches `socket`, opened with `token`; it is forgotten when it closes. */
  watch(socket: WebSocket, token: string, info: TokenInfo): void {
    const entry: Watched = { socket, token, info, timer: undefined };
    this.arm(entry);
    this.watched.add(entry);
    socket.once('close', () => this.forget(entry));
  }

  /** A token was revoked in this process: its sockets close now. */
  revoked(tokenId: string): void {
    for (const entry of [...this.watched]) if (entry.info.id === tokenId) this.end(entry, 'revoked');
  }

  /** Checks the token of `socket` now; false (and the socket closed) when it no longer holds. */
  async check(socket: WebSocket): Promise<boolean> {
    const entry = [...this.watched].find((candidate) => candidate.socket === socket);
    if (!entry) return socket.readyState === socket.OPEN;
    return this.checkOne(entry);
  }

  stop(): void {
    clearInterval(this.interval);
    for (const entry of this.watched) clearTimeout(entry.timer);
    this.watched.clear();
  }

  private arm(entry: Watched): void {
    clearTimeout(entry.timer);
    entry.timer = undefined;
    if (!entry.info.expiresAt) return;
    const left = Date.parse(entry.info.expiresAt) - Date.now();
    if (left <= 0) return this.end(entry, 'expired');
    entry.timer = setTimeout(() => (Date.parse(entry.info.expiresAt ?? '') <= Date.now() ? this.end(entry, 'expired') : this.arm(entry)), Math.min(left, MAX_TIMER_MS));
    entry.timer.unref();
  }

  private async checkAll(): Promise<void> {
    // One store read per distinct token, however many sockets it has open.
    const byToken = new Map<string, Watched[]>();
    for (const entry of this.watched) byToken.set(entry.token, [...(byToken.get(entry.token) ?? []), entry]);
    for (const entries of byToken.values()) {
      const first = entries[0];
      if (!first || !(await this.checkOne(first))) for (const entry of entries) this.end(entry, 'revoked');
    }
  }

  private async checkOne(entry: Watched): Promise<boolean> {
    if (!this.watched.has(entry)) return false;
    // A store that cannot answer keeps the socket: an outage is not a revocation.
    const auth = await this.store.authenticate(entry.token).catch(() => 'unknown' as const);
    if (auth === 'unknown') return true;
    if (!auth || auth.token.id !== entry.info.id) {
      this.end(entry, 'revoked');
      return false;
    }
    if (auth.token.expiresAt && Date.parse(auth.token.expiresAt) <= Date.now()) {
      this.end(entry, 'expired');
      return false;
    }
    return this.watched.has(entry);
  }

  private end(entry: Watched, why: 'revoked' | 'expired'): void {
    if (!this.watched.has(entry)) return;
    this.forget(entry);
    const { socket, info } = entry;
    if (socket.readyState !== socket.OPEN) return;
    const hint = `create a new token (dockhand token create --user ${info.user}) and reconnect with it`;
    const failure =
      why === 'expired'
        ? new DockhandError('token_expired', `token ${info.id} expired on ${info.expiresAt ?? '?'}; this socket is closed`, { hint })
        : new DockhandError('unauthenticated', `token ${info.id} was revoked; this socket is closed`, { hint });
    socket.send(JSON.stringify({ kind: 'error', ...failure.toBody() } satisfies ServerFrame));
    // The close reason is what a client without the frame sees (at most 123 bytes).
    socket.close(wsCloseCode(failure.code), why === 'expired' ? 'token expired' : 'token revoked');
  }

  private forget(entry: Watched): void {
    clearTimeout(entry.timer);
    this.watched.delete(entry);
  }
}
