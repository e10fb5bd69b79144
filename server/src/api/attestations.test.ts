import { createHash, generateKeyPairSync, sign, verify } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { DsseEnvelope, TaskEvent, type Task } from '@dockhand/protocol';
import { attestationEvent, signAttestation } from '../provenance/attestation';
import { verifyEnvelope } from '../provenance/dsse';
import { harness, type Harness } from './test-support';

let h: Harness;
afterEach(async () => h?.close());

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const key = { keyId: 'SHA256:api-test', sign: (bytes: Buffer) => sign(null, bytes, privateKey), verify: (bytes: Buffer, signature: Buffer) => verify(null, bytes, publicKey, signature) };

async function attest(task: Task, round: number, events: TaskEvent[] = []) {
  const signed = await signAttestation(
    { task, events, round, repository: 'app', branch: 'dockhand/x', diff: 'diff --git a/a b/a\n', tree: 'b'.repeat(40), parent: task.context.baseSha, requiredApprovals: 1, eventChain: null },
    key,
  );
  // Through the event log, as the runner writes it: masking must leave the envelope's bytes alone.
  const stored = await h.events.append(task.id, attestationEvent(signed));
  return { signed, stored };
}

describe('GET /v1/tasks/:id/attestation', () => {
  it("serves the latest push's envelope byte for byte to who may read the task, 404 to anyone else", async () => {
    h = await harness();
    const task = await h.createTask('alice');
    expect((await h.app.inject({ url: `/v1/tasks/${task.id}/attestation`, headers: h.auth('alice') })).statusCode).toBe(404);

    const first = await attest(task, 1);
    const second = await attest(task, 2, [first.stored]);
    const latest = await h.app.inject({ url: `/v1/tasks/${task.id}/attestation`, headers: h.auth('alice') });
    expect(latest.statusCode).toBe(200);
    expect(latest.body).toBe(second.signed.envelope);
    expect(`sha256:${createHash('sha256').update(latest.rawPayload).digest('hex')}`).toBe(second.signed.digest);
    expect(latest.headers.etag).toBe(`"${second.signed.digest}"`);
    expect(verifyEnvelope(latest.body, key).ok).toBe(true);
    DsseEnvelope.parse(JSON.parse(latest.body));

    const one = await h.app.inject({ url: `/v1/tasks/${task.id}/attestation?round=1`, headers: h.auth('admin') });
    expect(one.body).toBe(first.signed.envelope);
    expect((await h.app.inject({ url: `/v1/tasks/${task.id}/attestation?round=3`, headers: h.auth('alice') })).json()).toMatchObject({ error: { code: 'not_found', field: 'round' } });
    // Bob cannot see alice's task: the same 404 as for no task at all.
    const hidden = await h.app.inject({ url: `/v1/tasks/${task.id}/attestation`, headers: h.auth('bob') });
    expect(hidden.statusCode).toBe(404);
    expect(hidden.body).not.toContain('attestation yet');
    expect((await h.app.inject({ url: `/v1/tasks/${task.id}/attestation?round=0`, headers: h.auth('alice') })).statusCode).toBe(400);
  });

  it('is in the OpenAPI document with its DSSE envelope schema', async () => {
    h = await harness();
    const doc: unknown = JSON.parse((await h.app.inject({ url: '/docs/json' })).body);
    expect(doc).toMatchObject({ paths: { '/v1/tasks/{id}/attestation': { get: { tags: ['provenance'], responses: { 200: { content: { 'application/json': { schema: { required: expect.arrayContaining(['payloadType', 'payload', 'signatures']) } } } } } } } } });
  });
});
