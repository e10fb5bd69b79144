import { createHash } from 'node:crypto';
import { envelopeFromJSON, envelopeToJSON, toDSSEBundle } from '@sigstore/bundle';
import { dsse } from '@sigstore/core';
import { DsseEnvelope } from '@dockhand/protocol';
import { DockhandError } from '../errors';

/**
 * DSSE envelopes (https://github.com/secure-systems-lab/dsse) made and checked with sigstore's own
 * libraries, not by hand: the pre-authentication encoding is `@sigstore/core`'s `preAuthEncoding`,
 * the envelope is built by `@sigstore/bundle`'s `toDSSEBundle` (the one sigstore-js signs with) and
 * written and read by its `envelopeToJSON` / `envelopeFromJSON` (the protobuf-specs `Envelope`).
 * The signature is Ed25519 over PAE(payloadType, payload) by the server's key; `keyid` is the key's id.
 *
 * The envelope's JSON is kept as a string, byte for byte: its sha256 is the attestation's digest
 * (the commit's `Dockhand-Attestation:` trailer), so it is never parsed and written again.
 */

export const IN_TOTO_PAYLOAD_TYPE = 'application/vnd.in-toto+json';

/** What signs: the server's key (`provenance/signing-key.ts`), or a test's. */
export interface EnvelopeSigner {
  keyId: string;
  sign(bytes: Buffer): Buffer | Promise<Buffer>;
}

/** What checks a signature: the server's key, or a public key a verifier holds. */
export interface EnvelopeVerifier {
  keyId: string;
  verify(bytes: Buffer, signature: Buffer): boolean;
}

export interface SignedEnvelope {
  /** The envelope's JSON, exactly as its digest was taken. */
  json: string;
  /** `sha256:<hex>` of `json`'s UTF-8 bytes. */
  digest: string;
}

export function envelopeDigest(json: string): string {
  return `sha256:${createHash('sha256').update(json, 'utf8').digest('hex')}`;
}

export async function signEnvelope(payload: Buffer, signer: EnvelopeSigner, payloadType = IN_TOTO_PAYLOAD_TYPE): Promise<SignedEnvelope> {
  const signature = await signer.sign(dsse.preAuthEncoding(payloadType, payload));
  const bundle = toDSSEBundle({ artifact: payload, artifactType: payloadType, signature, keyHint: signer.keyId });
  const json = JSON.stringify(envelopeToJSON(bundle.content.dsseEnvelope));
  return { json, digest: envelopeDigest(json) };
}

export type EnvelopeCheck =
  | { ok: true; payloadType: string; payload: Buffer; keyId: string }
  | { ok: false; reason: string };

/**
 * Reads an envelope's JSON and checks a signature by `verifier`'s key over PAE(payloadType,
 * payload). Anything that is not a DSSE envelope, or has no valid signature by that key, is a
 * failure that says why; it never throws.
 */
export function verifyEnvelope(json: string, verifier: EnvelopeVerifier): EnvelopeCheck {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (error) {
    return { ok: false, reason: `the envelope is not JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
  const shape = DsseEnvelope.safeParse(raw);
  if (!shape.success) {
    const issue = shape.error.issues[0];
    return { ok: false, reason: `the envelope is not a DSSE envelope: ${issue ? `${issue.path.join('.') || '(root)'}: ${issue.message}` : 'invalid'}` };
  }
  const envelope = envelopeFromJSON(shape.data);
  const pae = dsse.preAuthEncoding(envelope.payloadType, envelope.payload);
  const ours = envelope.signatures.filter((signature) => signature.keyid === verifier.keyId);
  if (ours.length === 0) {
    return { ok: false, reason: `no signature by key ${verifier.keyId} (the envelope's: ${envelope.signatures.map((signature) => signature.keyid || '(no keyid)').join(', ')})` };
  }
  if (!ours.some((signature) => safeVerify(verifier, pae, signature.sig))) {
    return { ok: false, reason: `the signature by key ${verifier.keyId} does not verify over the envelope's payload` };
  }
  return { ok: true, payloadType: envelope.payloadType, payload: envelope.payload, keyId: verifier.keyId };
}

function safeVerify(verifier: EnvelopeVerifier, bytes: Buffer, signature: Buffer): boolean {
  try {
    return verifier.verify(bytes, signature);
  } catch {
    return false;
  }
}

/** The envelope's payload as JSON, for callers that checked the signature first. */
export function envelopePayload(check: Extract<EnvelopeCheck, { ok: true }>): unknown {
  if (check.payloadType !== IN_TOTO_PAYLOAD_TYPE) {
    throw new DockhandError('bad_request', `payloadType: ${check.payloadType} is not ${IN_TOTO_PAYLOAD_TYPE}`, { field: 'payloadType' });
  }
  try {
    return JSON.parse(check.payload.toString('utf8'));
  } catch (error) {
    throw new DockhandError('bad_request', `payload: not JSON (${error instanceof Error ? error.message : String(error)})`, { field: 'payload' });
  }
}
