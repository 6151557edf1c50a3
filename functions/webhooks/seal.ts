import type { EndpointSecrets } from './secrets.ts';
import type { WebhookStore } from './store.ts';

/** What {@link sealPlaintextSecrets} did. */
export interface SealReport {
  /** Endpoints whose plaintext secret was replaced by its ciphertext. */
  sealed: number;
  /** Endpoints sealed by someone else meanwhile, or deleted: left as they are. */
  skipped: number;
}

/**
 * Encrypts, in place, every endpoint secret stored in plaintext (endpoints registered before secrets were
 * encrypted): each is encrypted under its endpoint's context and replaces the plaintext in one
 * conditional write, so running it twice, or beside deliveries, changes nothing twice. The secret itself
 * does not change: receivers keep verifying with the one they have. Run once after upgrading a stack
 * (docs/operations.md, "Endpoint secrets"); deliveries read both forms meanwhile.
 */
export async function sealPlaintextSecrets(store: WebhookStore, secrets: EndpointSecrets): Promise<SealReport> {
  const report: SealReport = { sealed: 0, skipped: 0 };
  let cursor: Record<string, unknown> | undefined;
  do {
    const page = await store.plaintextSecretEndpoints(cursor);
    for (const row of page.rows) {
      if (row.secret === undefined) continue;
      const ciphertext = await secrets.seal(row, row.secret);
      if (await store.sealSecret(row.endpointId, row.secret, ciphertext)) report.sealed++;
      else report.skipped++;
    }
    cursor = page.cursor;
  } while (cursor);
  return report;
}
