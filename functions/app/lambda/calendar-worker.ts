// SQS entry point of the calendar queue's worker (supplier.invoke: the settle job). Job failures are recorded by the job layer, never thrown.
// Each record's run is a span of the invocation's trace, annotated with its job id, kind and attempt.
import { calendarModule } from '../../calendar/module.ts';
import type { Publisher } from '../../webhooks/publish.ts';
import { lambdaHost, withSecretKey } from '../aws.ts';
import { calendarBooking } from '../contexts/calendar-booking.ts';
import { buildCalendar, calendarEvents, noBatchLookups } from '../contexts/calendar.ts';
import { buildPublisher } from '../contexts/publisher.ts';

// The secrets key opens calendars' credentials (decrypt only, lib/access.ts); the provider talks to Google.
const { host, tracing } = lambdaHost('redial-worker-calendar', withSecretKey);
let publisher: Publisher | undefined;
const calendar = buildCalendar(host, { batches: noBatchLookups, events: calendarEvents(() => (publisher ??= buildPublisher(host))) }, calendarBooking);

export const handler = host.jobs.worker('calendar', calendarModule.handlers(calendar)).use(tracing.handlerMiddleware());
