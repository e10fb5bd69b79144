import * as vscode from 'vscode';
import type { ApiClient } from './api-client';
import type { TokenStore } from './auth';
import { DockhandError, describeError, isSignedOutError } from './errors';

/*
 * Where this window stands with the Dockhand server, checked rather than assumed: is a server
 * answering at the URL (`/healthz`), is there a token, does the server accept it (`/v1/me`). The
 * welcome view, the status bar and the palette's `when` clauses follow it through context keys.
 * A refused token anywhere (an API call, the event stream) makes the window signed out.
 */

export type ConnectionPhase = 'checking' | 'no_server' | 'signed_out' | 'signed_in';

export interface ConnectionState {
  phase: ConnectionPhase;
  /** Signed in: the server's name for the user. */
  user?: string;
  /** The Dockhand server's version, once `/healthz` identified it. */
  version?: string;
  /** Why, in words: the unreachable URL, the refused token. */
  detail?: string;
  /** Signed in earlier, but the server stopped answering (the task list or a stream failed). */
  disconnected: boolean;
}

export class Connection implements vscode.Disposable {
  private current: ConnectionState = { phase: 'checking', disconnected: false };
  private readonly changed = new vscode.EventEmitter<ConnectionState>();
  readonly onDidChange = this.changed.event;
  private generation = 0;

  constructor(
    private readonly api: () => ApiClient,
    private readonly tokens: TokenStore,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  get state(): ConnectionState {
    return this.current;
  }

  /** Checks from the start: server, token, user. Later checks win over earlier ones still running. */
  async check(): Promise<ConnectionState> {
    const generation = ++this.generation;
    const url = this.api().baseUrl;
    // A signed-in window keeps its views while it checks again (no flicker to the welcome view).
    if (this.current.phase !== 'signed_in') this.set({ phase: 'checking', disconnected: false });
    let next: ConnectionState;
    try {
      const { version } = await this.api().health();
      const token = await this.tokens.get();
      if (!token) next = { phase: 'signed_out', detail: `No token for ${url} yet.`, version, disconnected: false };
      else {
        const me = await this.api().me();
        next = { phase: 'signed_in', user: me.name, version, disconnected: false };
      }
    } catch (error) {
      if (isSignedOutError(error)) {
        const expired = error instanceof DockhandError && error.code === 'token_expired';
        next = { phase: 'signed_out', detail: expired ? describeError(error) : `The server at ${url} did not accept the stored token (unknown or revoked).`, disconnected: false };
      }
      else next = { phase: 'no_server', detail: describeError(error), disconnected: false };
    }
    if (generation !== this.generation) return this.current;
    this.log.info(`Connection to ${url}: ${next.phase}${next.user ? ` as ${next.user}` : ''}${next.detail ? ` (${next.detail})` : ''}`);
    this.set(next);
    return next;
  }

  /** The server refused the token (401 on a request or on the event stream). */
  signedOut(detail: string): void {
    if (this.current.phase === 'signed_out') return;
    this.generation += 1;
    this.log.warn(`Signed out: ${detail}`);
    this.set({ phase: 'signed_out', detail, disconnected: false });
  }

  signedIn(user: string): void {
    this.generation += 1;
    this.set({ phase: 'signed_in', user, disconnected: false });
  }

  /** A signed-in window lost (or found again) the server. */
  setReachable(reachable: boolean, detail?: string): void {
    if (this.current.phase !== 'signed_in' || this.current.disconnected === !reachable) return;
    this.log.warn(reachable ? 'The server answers again' : `Lost the server: ${detail ?? ''}`);
    this.set({ ...this.current, disconnected: !reachable, detail: reachable ? undefined : detail });
  }

  dispose(): void {
    this.changed.dispose();
  }

  private set(state: ConnectionState): void {
    this.current = state;
    void vscode.commands.executeCommand('setContext', 'dockhand.connection', state.phase);
    void vscode.commands.executeCommand('setContext', 'dockhand.signedIn', state.phase === 'signed_in');
    void vscode.commands.executeCommand('setContext', 'dockhand.disconnected', state.disconnected);
    this.changed.fire(state);
  }
}
