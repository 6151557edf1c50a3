// API Gateway (HTTP API) entry point of the agent's calendar tools during a call (docs/appointments.md): the
// calendar context's public routes (`auth: 'none'`: each request is signed as call results are, with the
// intake's secret), so they run alone, with their own grants (lib/access.ts `calendarTools`). It imports the
// calendar context, the webhooks publisher and the calls context's liveness, batch settings and signature
// check (contexts/calendar-calls.ts), and nothing else: the person on the line waits through every cold start.
import * as z from 'zod';
import { parseConfig } from '../../platform/config.ts';
import { createApiHandler } from '../../platform/http.ts';
import { calendarModule } from '../../calendar/module.ts';
import type { Publisher } from '../../webhooks/publish.ts';
import { lambdaClientHost, readSecret, withSecretKey } from '../aws.ts';
import { calendarBooking } from '../contexts/calendar-booking.ts';
import { callToolsPort } from '../contexts/calendar-calls.ts';
import { buildCalendar, calendarEvents, noBatchLookups } from '../contexts/calendar.ts';
import { buildPublisher } from '../contexts/publisher.ts';

// The signing secret, read once per cold start (lib/ keeps it in Secrets Manager, never in the environment).
const { CALL_WEBHOOK_SECRET_ARN } = parseConfig(z.object({ CALL_WEBHOOK_SECRET_ARN: z.string().startsWith('arn:') }));
const toolsSecret = await readSecret(CALL_WEBHOOK_SECRET_ARN);
const { host, tracing } = lambdaClientHost('redial-calendar-tools', () => ({ calendar: { toolsSecret } }), withSecretKey);
let publisher: Publisher | undefined;
const calendar = buildCalendar(host, { batches: noBatchLookups, events: calendarEvents(() => (publisher ??= buildPublisher(host))), calls: callToolsPort(host, toolsSecret) }, calendarBooking);

export const handler = createApiHandler(
  calendarModule.routes(() => calendar).filter((r) => r.auth === 'none'),
  host.logger,
).use(tracing.handlerMiddleware());
