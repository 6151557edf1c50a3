import { describe, expect, it } from 'vitest';
import { apiDocument, System } from '../../functions/app/system.ts';

describe('the OpenAPI document of a body that is not JSON', () => {
  it('DescribesTheCsvBatchRouteBodyAsTextCsv_WithIts413', () => {
    const unhosted = new System(() => {
      throw new Error('listing routes needs no host');
    });
    const doc = apiDocument(unhosted.routes()) as { paths: Record<string, Record<string, { requestBody?: { content: Record<string, unknown> }; responses: Record<string, unknown> }>> };
    for (const path of ['/v1/batches/csv', '/v1/ops/tenants/{tenantId}/batches/csv']) {
      const post = doc.paths[path]!['post']!;
      expect(Object.keys(post.requestBody!.content)).toEqual(['text/csv']);
      expect(post.responses['413']).toBeDefined();
    }
  });
});
