/**
 * The links mails carry, and the routes that answer them (functions/mail/routes.ts uses the same paths).
 * Each carries a single-use token; on AWS these routes are the public ones (lib/redial-stack.ts
 * PUBLIC_ROUTES), authenticated by the token alone.
 */
export const linkPaths = {
  confirmEmail: '/v1/tenants/{tenantId}/confirm-email',
  approveAccess: '/v1/tenants/{tenantId}/access-requests/{requestId}/approve',
  denyAccess: '/v1/tenants/{tenantId}/access-requests/{requestId}/deny',
} as const;

/** An absolute link: the path with its parameters filled in, and `?token=`. */
export function linkTo(baseUrl: string, path: string, params: Record<string, string>, token: string): string {
  const filled = path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new RangeError(`link ${path} needs ${name}`);
    return encodeURIComponent(value);
  });
  return `${baseUrl}${filled}?token=${encodeURIComponent(token)}`;
}
