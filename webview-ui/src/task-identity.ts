import type { Task } from '@dockhand/protocol';

/*
 * How tasks are told apart in the side panel, the task picker and notifications: a number in
 * order of creation, a short id and how long ago they were sent. No DOM here: the extension host
 * uses it too.
 */

/** The id without its prefix, first 6 characters: `t_9f3a1c…` → `9f3a1c`. */
export function shortId(id: string): string {
  return id.replace(/^t_/, '').slice(0, 6);
}

export function relativeTime(iso: string, now: number): string {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return '';
  const seconds = Math.max(0, Math.round((now - then) / 1000));
  if (seconds < 45) return 'just now';
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 24) return `${hours} h ago`;
  const days = Math.round(hours / 24);
  return days === 1 ? 'yesterday' : `${days} days ago`;
}

/** Task numbers in order of creation, 1 for the oldest the list holds. */
export function taskNumbers(tasks: readonly Task[]): Map<string, number> {
  const ordered = [...tasks].sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  return new Map(ordered.map((task, index) => [task.id, index + 1]));
}
