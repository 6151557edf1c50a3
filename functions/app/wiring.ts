import type { ApiKeyVerifier } from '../platform/tenancy.ts';
import type { CallToolsPort } from '../calendar/ports.ts';
import type { CalendarDeps } from '../calendar/deps.ts';
import type { CallsDeps } from '../calls/deps.ts';
import type { MailDeps } from '../mail/context.ts';
import type { OpsDeps } from '../ops/jobs-api.ts';
import type { Publisher } from '../webhooks/publish.ts';
import type { WebhooksContext } from '../webhooks/context.ts';
import { calendarBatches, calendarPort } from './contexts/calendar-links.ts';
import { buildCalendar, calendarEvents } from './contexts/calendar.ts';
import type { CalendarBooking } from './contexts/calendar.ts';
import { buildCalls } from './contexts/calls.ts';
import { buildMail } from './contexts/mail.ts';
import { buildOps } from './contexts/ops.ts';
import { buildPublisher } from './contexts/publisher.ts';
import { buildWebhooks } from './contexts/webhooks.ts';
import type { SystemHost } from './host.ts';

/**
 * Redial's contexts wired over one host, each built the first time something asks for it, once: what the
 * routes draw on. It imports no context's job handlers (their modules), so the API functions' bundles hold
 * the routes and not the jobs' code (nodemailer, the dialer, the import jobs); {@link System} (./system.ts)
 * adds the handlers.
 */
export class Contexts {
  private readonly hostOf: () => SystemHost;
  private built: SystemHost | undefined;
  private callsDeps: CallsDeps | undefined;
  private mailDeps: MailDeps | undefined;
  private webhooksContext: WebhooksContext | undefined;
  private eventPublisher: Publisher | undefined;
  private opsDeps: OpsDeps | undefined;
  private calendarDeps: CalendarDeps | undefined;

  /** `host` is called once, the first time anything needs it. */
  constructor(host: () => SystemHost) {
    this.hostOf = host;
  }

  get host(): SystemHost {
    return (this.built ??= this.hostOf());
  }

  /** The calls context, its ports wired to webhooks (events), mail (the owner's mail) and calendar (a batch's calendar). */
  get calls(): CallsDeps {
    return (this.callsDeps ??= this.buildCalls());
  }

  get mail(): MailDeps {
    return (this.mailDeps ??= buildMail(this.host));
  }

  get webhooks(): WebhooksContext {
    return (this.webhooksContext ??= buildWebhooks(this.host));
  }

  /** How tenant routes check a presented API key (the calls context's keys, with their per-container cache). */
  get apiKeys(): ApiKeyVerifier {
    return this.calls.keys;
  }

  get ops(): OpsDeps {
    return (this.opsDeps ??= buildOps(this.host));
  }

  /** The calendar context, its ports wired to calls (the batches that name a calendar) and webhooks (appointment events). */
  get calendar(): CalendarDeps {
    const calls = this.calendarCalls();
    return (this.calendarDeps ??= buildCalendar(this.host, { batches: calendarBatches(this.host), events: calendarEvents(() => this.publisher()), ...(calls ? { calls } : {}) }, this.calendarBooking()));
  }

  /** What the agent's tools ask of the calls context: none here (the API functions serve no tool); {@link System} gives it. */
  protected calendarCalls(): CallToolsPort | undefined {
    return undefined;
  }

  /** What builds the calendar provider and the booking's store: none here (the routes need neither); {@link System} gives it. */
  protected calendarBooking(): ((host: SystemHost) => CalendarBooking) | undefined {
    return undefined;
  }

  /** Closes what the built contexts hold open (the webhooks HTTP client's pooled connections). */
  async close(): Promise<void> {
    await this.webhooksContext?.close();
  }

  private buildCalls(): CallsDeps {
    return buildCalls(this.host, () => this.publisher(), calendarPort(this.host));
  }

  /** The webhooks context's publisher when this process built the context, else one over its store alone. */
  private publisher(): Publisher {
    return this.webhooksContext?.publisher ?? (this.eventPublisher ??= buildPublisher(this.host));
  }
}
