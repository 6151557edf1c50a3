import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle, coldImport, deployedFunctions, LAMBDA_BASE_ENV, startStandIns } from '../support/lambda-bundles.ts';
import { root } from './synth.ts';

/** Bundle size targets (every file of the asset but source maps), in bytes: 0.8 MiB for the intake, 1.2 MiB for the others. */
const INTAKE_LIMIT = 0.8 * 1024 * 1024;
const OTHERS_LIMIT = 1.2 * 1024 * 1024;

describe('every deployed function’s bundle loads alone, cold, and is small', () => {
  let standIns: Awaited<ReturnType<typeof startStandIns>>;
  beforeAll(async () => {
    standIns = await startStandIns();
  });
  afterAll(async () => {
    await standIns.close();
  });

  const functions = deployedFunctions();

  it('covers every function of the stack', () => {
    expect(functions.map((f) => f.name).sort()).toEqual(
      ['api', 'callsWorker', 'deliveriesWorker', 'dialWorker', 'intake', 'mailWorker', 'opsWorker', 'publicLinks', 'rescuer', 'tenantApi', 'webhooksWorker'].sort(),
    );
  });

  for (const fn of functions) {
    it(`${fn.name}: builds within its size target and imports alone with its template environment, calling only what it reads at cold start`, async () => {
      const bundle = await buildBundle(root, fn.entry, join(root, '.bench', 'bundle-test', fn.name));
      expect(bundle.bytes, `${fn.name} is ${bundle.bytes} bytes`).toBeLessThanOrEqual(fn.name === 'intake' ? INTAKE_LIMIT : OTHERS_LIMIT);
      const before = standIns.requests.length;
      const loaded = await coldImport(bundle.file, { ...LAMBDA_BASE_ENV, ...fn.env, ...standIns.env });
      expect(loaded.stderr).toBe('');
      expect(loaded).toMatchObject({ ok: true, hasHandler: true });
      // The intake reads its signing secret once at cold start; nothing else calls AWS before its first event.
      const expected = fn.name === 'intake' ? [{ service: 'SECRETS_MANAGER', operation: 'secretsmanager.GetSecretValue' }] : [];
      expect(standIns.requests.slice(before)).toEqual(expected);
    }, 60_000);
  }
});
