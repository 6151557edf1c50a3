/** Base of every mail-context error. */
export class MailError extends Error {
  override readonly name: string = 'MailError';
}

/** Why a link was refused. `used`: it worked once already; `expired`; `invalid`: forged, superseded or never issued. */
export type LinkRefusal = 'used' | 'expired' | 'invalid';

/** A confirm-email, approve or deny link was refused; nothing was changed. */
export class LinkRefusedError extends MailError {
  override readonly name = 'LinkRefusedError';
  readonly reason: LinkRefusal;
  constructor(reason: LinkRefusal, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.reason = reason;
  }
}

/** The tenant has no confirmed owner address, so there is nobody to ask. */
export class NoConfirmedOwnerError extends MailError {
  override readonly name = 'NoConfirmedOwnerError';
  readonly tenantId: string;
  constructor(tenantId: string) {
    super(`tenant ${tenantId} has no confirmed owner address`);
    this.tenantId = tenantId;
  }
}

/** A send-then-mark write found the mark already there (or its subject gone); the mail went out regardless. */
export class MarkRefusedError extends MailError {
  override readonly name = 'MarkRefusedError';
  readonly what: string;
  constructor(what: string, options?: { cause?: unknown }) {
    super(`mark refused: ${what}`, options);
    this.what = what;
  }
}
