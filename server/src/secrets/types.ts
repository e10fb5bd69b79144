import { z } from 'zod';

/** A secret's name: what `environment.yml` names it by (`token: NPM_ACME`). */
export const SecretName = z.string().regex(/^[A-Z][A-Z0-9_]{0,63}$/, 'a secret name is 1-64 of A-Z 0-9 _, starting with a letter (NPM_ACME)');

/** The largest value kept (a token, a key file): 64 KiB. */
export const MAX_SECRET_BYTES = 64 * 1024;

/** One stored secret as the store keeps it: the value only encrypted (cipher.ts). */
export interface SecretRow {
  repo: string;
  name: string;
  /** `v1:<key id>:<iv>:<tag>:<body>`, base64 parts. */
  ciphertext: string;
  keyId: string;
  setBy: string;
  setAt: string;
  lastUsedAt: string | null;
  /** What used it last: `snapshot build <key>` (a build, never a task's sandbox). */
  lastUsedBy: string | null;
}

/** The store's side (SQLite and Postgres: `store/secret-rows.ts`). */
export interface SecretRows {
  /** Inserts or replaces; a replaced secret's last use is cleared (it is a new value). */
  put(row: Omit<SecretRow, 'lastUsedAt' | 'lastUsedBy'>): Promise<void>;
  get(repo: string, name: string): Promise<SecretRow | undefined>;
  list(repo: string): Promise<SecretRow[]>;
  /** Every repository's rows (the masking list at start-up). */
  listAll(): Promise<SecretRow[]>;
  /** False when there was none. */
  remove(repo: string, name: string): Promise<boolean>;
  /** Every secret of a repository (its registration removed); how many there were. */
  removeRepo(repo: string): Promise<number>;
  markUsed(repo: string, name: string, at: string, by: string): Promise<void>;
  /** How many stored values each key id encrypted (the start-up check). */
  keyIds(): Promise<Array<{ keyId: string; count: number }>>;
}

/** What `secret list` and the API show: never a value. */
export const SecretView = z.object({
  name: z.string(),
  setBy: z.string(),
  setAt: z.string(),
  lastUsedAt: z.string().nullable(),
  lastUsedBy: z.string().nullable(),
});
export type SecretView = z.infer<typeof SecretView>;
