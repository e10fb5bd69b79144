import type { z } from 'zod';

/**
 * One JSON request to a Dockhand API with a bearer token, its answer parsed by `schema`; an answer
 * that is not 2xx throws with the method, path, status and body.
 */
export async function apiJson<T>(baseUrl: string, token: string, method: string, path: string, schema: z.ZodType<T>, body?: unknown): Promise<T> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return schema.parse(JSON.parse(text));
}
