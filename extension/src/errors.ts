import type { ErrorCode } from '@dockhand/protocol';

/** The extension's one error type: what went wrong, in words a developer can act on. */
export class DockhandError extends Error {
  constructor(
    readonly code: ErrorCode | 'network' | 'not_signed_in' | 'bad_response',
    message: string,
    readonly details: { status?: number; field?: string; hint?: string } = {},
  ) {
    super(message);
    this.name = 'DockhandError';
  }

  /** One line for a notification: the message, the field to blame and what to do. */
  describe(): string {
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
