/* Kept apart from session.ts so the API can name a run's repositories without loading a fleet. */

/** SWE-bench's `owner/name` as one name segment (`owner__name`, SWE-bench's own instance prefix). */
export function registeredName(repo: string): string {
  return repo.replace(/\//g, '__').replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 100) || 'repo';
}
