import type { Task } from '@dockhand/protocol';
import { h } from './dom';
import { stateLabel, stateTone } from './trajectory';

/*
 * The task list at the top of the side panel: one button per task, so it is reached with Tab and
 * chosen with Enter or Space. Tasks with the same title are told apart by their number (in order
 * of creation), a short id and how long ago they were sent.
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

export function renderTaskItems(tasks: readonly Task[], selectedTaskId: string | null, now: number, choose: (taskId: string) => void): HTMLElement[] {
  const numbers = taskNumbers(tasks);
  return tasks.map((task) => {
    const selected = task.id === selectedTaskId;
    const number = numbers.get(task.id) ?? 0;
    const when = relativeTime(task.createdAt, now);
    const item = h(
      'button',
      {
        className: `task-item${selected ? ' selected' : ''}`,
        dataset: { taskId: task.id },
        title: `${task.ticket.title}\nTask ${number} · ${task.id} · sent ${new Date(task.createdAt).toLocaleString()}`,
        attrs: { type: 'button', ...(selected ? { 'aria-current': 'true' } : {}) },
      },
      h('span', { className: 'task-item-title' }, task.ticket.title),
      h('span', { className: `badge tone-${stateTone(task.state)}` }, stateLabel(task.state)),
      h('span', { className: 'task-item-meta' }, `#${number} · ${shortId(task.id)} · ${when} · $${task.usage.costUsd.toFixed(2)}`),
    );
    item.addEventListener('click', () => choose(task.id));
    return h('li', {}, item);
  });
}
