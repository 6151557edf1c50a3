import * as z from 'zod';

/**
 * Tenancy by construction (docs/operations.md, "Who may call what"). A tenant route's handler is given a
 * {@link TenantScope}, and the stores take it to build the keys they read and write: every tenant-owned
 * item's partition key begins with `TENANT#<tenantId>#`, so a handler holding tenant B's scope cannot name
 * an item of tenant A — it finds nothing, and answers 404 as for an id that never existed.
 *
 * A scope is made only by the request's authentication, in functions/platform/http.ts: from a tenant's
 * API key ({@link scopeOfKey}), or, on an operator copy of a tenant route (`/v1/ops/tenants/{tenantId}/…`,
 * IAM on AWS), from the tenant its path names ({@link operatorScope}). The class's constructor is private,
 * and the structure gate (test/gate/structure-gate.ts, `tenant-scope-mint`) lets no other file of
 * functions/ import those two: a handler cannot make a scope out of a tenant id in a body or a query.
 */

/** A tenant id: tenants choose it (`PUT /v1/tenants/{tenantId}`); it appears in keys, ids and URLs. */
export const tenantIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'expected a tenant id: 1–64 of A–Z, a–z, 0–9, _ and -');

/** The characters of a tenant id, for the patterns of ids that name their tenant (`b_<tenantId>.<hex>`). */
export const TENANT_ID_PATTERN = '[A-Za-z0-9_-]{1,64}';

let mint: (tenantId: string, via: TenantScope['via']) => TenantScope;

/** The tenant a request acts for, as its credentials name it (never as its body names it). */
export class TenantScope {
  readonly tenantId: string;
  /** How the request came to act for the tenant: one of its API keys, or an operator naming it in the path. */
  readonly via: { type: 'key'; keyId: string } | { type: 'operator' };

  private constructor(tenantId: string, via: TenantScope['via']) {
    this.tenantId = tenantId;
    this.via = via;
    Object.freeze(this);
  }

  static {
    mint = (tenantId, via) => {
      if (!tenantIdSchema.safeParse(tenantId).success) throw new RangeError(`not a tenant id: ${JSON.stringify(tenantId)}`);
      return new TenantScope(tenantId, via);
    };
  }

  /** The partition keys of this tenant's items all begin with this. */
  get keyPrefix(): string {
    return tenantKeyPrefix(this.tenantId);
  }
}

/** `TENANT#<tenantId>#`: what every tenant-owned item's partition key begins with. */
export const tenantKeyPrefix = (tenantId: string): string => `TENANT#${tenantId}#`;

/** The scope of a request that presented one of the tenant's API keys (the tenant auth step, functions/platform/http.ts). */
export const scopeOfKey = (tenantId: string, keyId: string): TenantScope => mint(tenantId, { type: 'key', keyId });

/**
 * The scope of an operator's request on an operator copy of a tenant route, for the tenant its path names
 * (functions/platform/http.ts). IAM authenticates the operator on AWS; locally the operator is whoever may
 * reach 127.0.0.1.
 */
export const operatorScope = (tenantId: string): TenantScope => mint(tenantId, { type: 'operator' });

/** What a tenant route is given to find a presented API key's tenant (functions/calls/keys.ts implements it). */
export interface ApiKeyVerifier {
  /**
   * The tenant and key id of a presented key, or undefined when it is malformed, unknown or revoked. A
   * store failure throws (the request answers 503, nothing written).
   */
  verify(presented: string): Promise<{ tenantId: string; keyId: string } | undefined>;
}

/**
 * Ids redial makes for a tenant's things name their tenant: `<prefix>_<tenantId>.<32 hex>` (`b_acme.9cb1…`
 * for a batch, `ep_acme.0f3a…` for an endpoint). So the code that works on one from a job's arguments or a
 * signed call result (a worker, the intake) builds its keys from the id alone, reading nothing first; and a
 * tenant route builds them from its {@link TenantScope}, so an id of another tenant names nothing there.
 */
export interface OwnedIds {
  /** The id of a tenant's thing whose own part is `hex` (32 lowercase hex characters). */
  make(tenantId: string, hex: string): string;
  /** The tenant and the own part of an id of this kind; undefined when it is not one. */
  parse(id: string): { tenantId: string; hex: string } | undefined;
  /** The id's parts only when it names the scope's tenant: a tenant route's only way from an id to its keys. */
  inScope(scope: TenantScope, id: string): { tenantId: string; hex: string } | undefined;
  /** The id's zod schema (a route's path parameter). */
  schema: z.ZodString;
}

/** The ids of one kind of a tenant's things: `<prefix>_<tenantId>.<32 hex>`. */
export function ownedIds(prefix: string, what: string): OwnedIds {
  const pattern = new RegExp(`^${prefix}_(${TENANT_ID_PATTERN})\\.([0-9a-f]{32})$`);
  const parse = (id: string) => {
    const match = pattern.exec(id);
    return match ? { tenantId: match[1]!, hex: match[2]! } : undefined;
  };
  return {
    make: (tenantId, hex) => `${prefix}_${tenantId}.${hex}`,
    parse,
    inScope: (scope, id) => {
      const parts = parse(id);
      return parts && parts.tenantId === scope.tenantId ? { tenantId: scope.tenantId, hex: parts.hex } : undefined;
    },
    schema: z.string().regex(pattern, `not ${what} id (${prefix}_<tenantId>.<32 hex>)`),
  };
}
