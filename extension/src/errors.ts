import type { ErrorCode } from '@dockhand/protocol';

/** The extension's one error type: what went wrong, in words a developer can act on. */
export class DockhandError extends Error {
  constructor(
    readonly code: ErrorCode | 'network' | 'not_signed_in' | 'bad_response' | 'not_dockhand',
    message: string,
    readonly details: { status?: number; field?: string; hint?: string } = {},
  ) {
    super(message);
    this.name = 'DockhandError';
  }

  /** One line for a notification: the message, the field to blame and what to do. */
  describe(): string {
    if (this.code === 'token_expired') return tokenExpiredText(this.message);
    const field = this.details.field ? ` (${this.details.field})` : '';
    const hint = this.details.hint ? ` ${this.details.hint}` : '';
    return `${this.message}${field}.${hint}`.replace(/\.\./g, '.');
  }
}

export function describeError(error: unknown): string {
  if (error instanceof DockhandError) return error.describe();
  if (error instanceof Error) return error.message;
  return String(error);
}

/** What fixes an error, as buttons: each runs a command. */
export interface ErrorAction {
  title: string;
  command: string;
}

export function errorActions(error: unknown): ErrorAction[] {
  if (!(error instanceof DockhandError)) return [{ title: 'Show details', command: 'dockhand.showOutput' }];
  switch (error.code) {
    case 'network':
    case 'not_dockhand':
      return [
        { title: 'Set server URL', command: 'dockhand.setServerUrl' },
        { title: 'Retry', command: 'dockhand.checkConnection' },
      ];
    case 'unauthenticated':
    case 'token_expired':
    case 'not_signed_in':
      return [{ title: 'Sign in', command: 'dockhand.signIn' }];
    default:
      return [{ title: 'Show details', command: 'dockhand.showOutput' }];
  }
}

/** Whether the server refused the token (the window is then signed out, not "reconnecting"). */
export function isSignedOutError(error: unknown): boolean {
  return error instanceof DockhandError && (error.code === 'unauthenticated' || error.code === 'token_expired' || error.code === 'not_signed_in');
}

/**
 * The server's `token_expired` answer ("token tok_… expired on 2026-03-01T09:30:00.000Z") in words:
 * when, and how to get a new one.
 */
export function tokenExpiredText(serverMessage: string): string {
  const iso = /expired on (\S+)/.exec(serverMessage)?.[1];
  const at = iso && !Number.isNaN(Date.parse(iso)) ? `${new Date(iso).toISOString().slice(0, 16).replace('T', ' ')} UTC` : undefined;
  return `Your Dockhand token expired${at ? ` on ${at}` : ''}: create a new one with "dockhand token create --user <you>" on the server and run "Dockhand: Sign in" with it.`;
}
