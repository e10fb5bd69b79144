import type { Task } from '@dockhand/protocol';
import { h } from './dom';
import { relativeTime, shortId, taskNumbers } from './task-identity';
import { stateLabel, stateTone } from './trajectory';

/*
 * The task list at the top of the side panel: one button per task, so it is reached with Tab and
 * chosen with Enter or Space. Tasks with the same title are told apart by their number (in order
 * of creation), a short id and how long ago they were sent.
 */

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
