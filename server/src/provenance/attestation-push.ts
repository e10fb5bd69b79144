import type { NewEvent } from '@dockhand/protocol';
import { attestationEvent, signAttestation, type AttestationInput } from './attestation';
import type { EnvelopeSigner } from './dsse';

/**
 * The attestation at push time: the forge's push calls `trailers` with the tree and parent of the
 * commit it is about to make (`forge/push.ts`, `forge/follow-push.ts`); the attestation is signed,
 * written to the task's log (`attestation.signed`, before the commit exists: an event is written
 * before the action it describes), and its digest goes into the commit's
 * `Dockhand-Attestation: sha256:<hex>` trailer. A retry after a crash finds the round's attestation for the
 * same tree and parent in the log and answers the same trailer, so it builds the identical commit.
 */

export const ATTESTATION_TRAILER = 'Dockhand-Attestation';

export interface PushAttestorOptions {
  signer: EnvelopeSigner;
  /** Appends to the task's log (the runner's `EventLog.append`: masked, fenced on a fleet). */
  append: (taskId: string, event: NewEvent) => Promise<unknown>;
  /** The head of the task's event hash chain; absent where the store keeps none. */
  chainHead?: (taskId: string) => Promise<{ seq: number; hash: string } | undefined>;
  /** Values the server holds as secrets. */
  known?: readonly string[];
}

/** What a push knows of its attestation; the commit (tree, parent), chain head and secrets come from the attestor. */
export type PushAttestationRequest = Omit<AttestationInput, 'tree' | 'parent' | 'eventChain' | 'known'>;

export interface PushAttestor {
  /** The push's trailer hook (`CommitTrailerHook` in `forge/push.ts`): the commit's tree and parent in, the `Dockhand-Attestation:` line out. */
  trailers(request: PushAttestationRequest): (built: { tree: string; parent: string }) => Promise<string[]>;
}

export function createPushAttestor(options: PushAttestorOptions): PushAttestor {
  return {
    trailers(request) {
      return async ({ tree, parent }) => {
        const earlier = request.events.find(
          (event) => event.type === 'attestation.signed' && event.data.round === request.round && event.data.treeSha === tree && event.data.parentSha === parent && event.data.keyId === options.signer.keyId,
        );
        if (earlier?.type === 'attestation.signed') return [`${ATTESTATION_TRAILER}: ${earlier.data.digest}`];
        const eventChain = (await options.chainHead?.(request.task.id)) ?? null;
        const signed = await signAttestation(
          { ...request, tree, parent, eventChain, ...(options.known ? { known: options.known } : {}) },
          options.signer,
        );
        await options.append(request.task.id, attestationEvent(signed));
        return [`${ATTESTATION_TRAILER}: ${signed.digest}`];
      };
    },
  };
}

/** The digest a commit message's `Dockhand-Attestation:` trailer names (the last one), if any. */
export function attestationTrailer(message: string): string | undefined {
  const found = [...message.matchAll(new RegExp(`^${ATTESTATION_TRAILER}: (sha256:[0-9a-f]{64})\\s*$`, 'gm'))];
  return found.at(-1)?.[1];
}
