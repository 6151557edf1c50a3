import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as z from 'zod';
import type { Clock, TimerClock } from '../../platform/clock.ts';
import { sendOnce } from '../../platform/outbound.ts';
import type { Rng } from '../../platform/rng.ts';
import { signCallWebhook } from '../signature.ts';

/**
 * The built-in call placer for `npm start` (local only): it answers the placer contract
 * (`{batchId, contactNumber, round, callId, callbackUrl}`) and, after the call's simulated length on the
 * runtime's clock (so TIME_SCALE speeds it up), posts a signed result carrying the call's callId to the
 * callbackUrl — with a seeded mix of outcomes, including the two the intake must survive:
 * a result that never comes (the watchdog ends the call) and one that comes twice.
 */
export const SimulatedOutcome = {
  noPickup: 'noPickup',
  /** FAILED, empty transcription, 0 s: never connected. */
  sipFailure: 'sipFailure',
  /** FAILED, empty transcription, shorter than a conversation. */
  shortCall: 'shortCall',
  /** FAILED after a real conversation. */
  genuineFail: 'genuineFail',
  completed: 'completed',
  /** COMPLETED, empty transcription, long: picked up and rejected the agent. */
  userRejection: 'userRejection',
  temporaryUnavailable: 'temporaryUnavailable',
  invalidNumber: 'invalidNumber',
  /** The result is never sent: only the watchdog ends the call. */
  lostWebhook: 'lostWebhook',
  /** The result (COMPLETED) is sent twice. */
  duplicateWebhook: 'duplicateWebhook',
  /** The placer refuses the call (503): the dialer completes it with INTERNAL_ERROR. */
  placerRefuses: 'placerRefuses',
} as const;
export type SimulatedOutcome = (typeof SimulatedOutcome)[keyof typeof SimulatedOutcome];
export const simulatedOutcomes = Object.values(SimulatedOutcome) as [SimulatedOutcome, ...SimulatedOutcome[]];

/** The result each outcome reports (the code and evidence the AI call handler would send). */
export const simulatedReports: Record<SimulatedOutcome, { code: string; emptyTranscription: boolean; durationSeconds: number } | undefined> = {
  noPickup: { code: 'NO_PICKUP', emptyTranscription: true, durationSeconds: 0 },
  sipFailure: { code: 'FAILED', emptyTranscription: true, durationSeconds: 0 },
  shortCall: { code: 'FAILED', emptyTranscription: true, durationSeconds: 4 },
  genuineFail: { code: 'FAILED', emptyTranscription: false, durationSeconds: 45 },
  completed: { code: 'COMPLETED', emptyTranscription: false, durationSeconds: 95 },
  userRejection: { code: 'COMPLETED', emptyTranscription: true, durationSeconds: 30 },
  temporaryUnavailable: { code: 'TEMPORARY_UNAVAILABLE', emptyTranscription: true, durationSeconds: 0 },
  invalidNumber: { code: 'INVALID_NUMBER', emptyTranscription: true, durationSeconds: 0 },
  lostWebhook: { code: 'COMPLETED', emptyTranscription: false, durationSeconds: 60 },
  duplicateWebhook: { code: 'COMPLETED', emptyTranscription: false, durationSeconds: 60 },
  placerRefuses: undefined,
};

/** The default mix, by weight. */
export const DEFAULT_MIX: Record<SimulatedOutcome, number> = {
  noPickup: 3,
  sipFailure: 1,
  shortCall: 1,
  genuineFail: 1,
  completed: 4,
  userRejection: 1,
  temporaryUnavailable: 1,
  invalidNumber: 0,
  lostWebhook: 1,
  duplicateWebhook: 1,
  placerRefuses: 0,
};

/** `SIMULATOR_MIX`: `noPickup=3,completed=2,…` (unnamed outcomes keep their default weight). */
export const simulatorMixEnv = z
  .string()
  .transform((text, ctx) => {
    const mix: Partial<Record<SimulatedOutcome, number>> = {};
    for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
      const [name, weight] = part.split('=');
      const outcome = z.enum(simulatedOutcomes).safeParse(name);
      const value = Number(weight);
      if (!outcome.success || !Number.isFinite(value) || value < 0) {
        ctx.addIssue({ code: 'custom', message: `"${part}": expected <outcome>=<weight ≥ 0>, outcomes ${simulatedOutcomes.join(', ')}` });
        return z.NEVER;
      }
      mix[outcome.data] = value;
    }
    return mix;
  });

const placerRequest = z.object({
  batchId: z.string().min(1),
  contactNumber: z.string().min(1),
  round: z.number().int().min(1),
  callId: z.string().min(1).max(200),
  callbackUrl: z.url(),
  placedAt: z.string().optional(),
  externalId: z.string().optional(),
  variables: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
});

/** One call the simulator accepted (or refused), and what became of its result. */
export interface SimulatedCall {
  batchId: string;
  contactNumber: string;
  round: number;
  /** The call's id, as the dialer gave it; the result carries it back. */
  callId: string;
  callbackUrl: string;
  /** What the dialer sent of the contact and the dial: echoed back (placedAt, externalId) or read into the summary (variables). */
  placedAt?: string | undefined;
  externalId?: string | undefined;
  variables?: Record<string, string | number | boolean> | undefined;
  outcome: SimulatedOutcome;
  acceptedAt: number;
  /** When its result is (or was) due, clock ms; undefined for a refused call. */
  resultAt: number | undefined;
  /** The intake's answers to each send (two for a duplicate, none for a lost result). */
  responses: { status: number; body: string }[];
  /** Whether the call is over from the placer's side (result delivered, lost, or refused). */
  ended: boolean;
}

export interface SimulatorOptions {
  /** When results are due (the runtime's clock: TIME_SCALE speeds calls up). */
  clock: TimerClock;
  /** What results are stamped and signed with (the wall clock, as a real AI handler's; default `clock`). */
  signingClock?: Clock;
  rng: Rng;
  /** The intake's Standard Webhooks secret. */
  secret: string;
  mix?: Partial<Record<SimulatedOutcome, number>>;
  /** Picks each call's outcome instead of the mix (tests script rounds with it). */
  script?: (call: { batchId: string; contactNumber: string; round: number }) => SimulatedOutcome;
  /** Time from acceptance to the result, clock ms (default: 3 s of ringing plus the reported duration). */
  resultDelayMs?: (call: { contactNumber: string; round: number; outcome: SimulatedOutcome }) => number;
  /** Port on 127.0.0.1 (default: any free port). */
  port?: number;
  /** A spoken call's summary is padded to this many bytes (default: its one sentence), as a real agent's summary would run: the capacity day prices artefacts at a stated size. */
  summaryBytes?: number;
}

/** The simulator, running on 127.0.0.1. */
export class CallPlacerSimulator {
  readonly url: string;
  readonly calls: SimulatedCall[] = [];
  private readonly options: SimulatorOptions;
  private readonly server: Server;
  private readonly timers = new Set<() => void>();
  private readonly sends = new Set<Promise<void>>();
  private live = 0;
  private peak = 0;

  private constructor(options: SimulatorOptions, server: Server, url: string) {
    this.options = options;
    this.server = server;
    this.url = url;
  }

  /** Starts the simulator's HTTP server. */
  static async start(options: SimulatorOptions): Promise<CallPlacerSimulator> {
    const ref: { simulator?: CallPlacerSimulator } = {};
    const server = createServer((req, res) => {
      void ref.simulator?.serve(req, res);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    ref.simulator = new CallPlacerSimulator(options, server, `http://127.0.0.1:${port}/calls`);
    return ref.simulator;
  }

  /** Calls in progress from the placer's side now (accepted, result not yet delivered). */
  get inProgress(): number {
    return this.live;
  }

  /** The most calls ever in progress at once. */
  get maxInProgress(): number {
    return this.peak;
  }

  /** Results being sent now. */
  get sending(): number {
    return this.sends.size;
  }

  /** Resolves when no result is being sent. */
  async idle(): Promise<void> {
    while (this.sends.size > 0) await Promise.all([...this.sends]);
  }

  /** Stops accepting calls and drops results not yet sent. */
  async close(): Promise<void> {
    for (const cancel of this.timers) cancel();
    this.timers.clear();
    await this.idle();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    let parsed: z.infer<typeof placerRequest>;
    try {
      const result = placerRequest.safeParse(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      if (req.method !== 'POST' || !result.success) throw new Error('bad request');
      parsed = result.data;
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'expected POST {batchId, contactNumber, round, callId, callbackUrl}' }));
      return;
    }
    const outcome = this.options.script?.(parsed) ?? this.pick();
    const now = this.options.clock.now();
    const call: SimulatedCall = { ...parsed, outcome, acceptedAt: now, resultAt: undefined, responses: [], ended: false };
    this.calls.push(call);
    if (outcome === SimulatedOutcome.placerRefuses) {
      call.ended = true;
      res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'no capacity' }));
      return;
    }
    const report = simulatedReports[outcome]!;
    call.resultAt = now + (this.options.resultDelayMs?.({ contactNumber: call.contactNumber, round: call.round, outcome }) ?? 3_000 + report.durationSeconds * 1000);
    this.live++;
    this.peak = Math.max(this.peak, this.live);
    const cancel = this.options.clock.setTimer(call.resultAt, () => {
      this.timers.delete(cancel);
      this.track(this.finish(call));
    });
    this.timers.add(cancel);
    res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ accepted: true }));
  }

  /** Sends the call's result (none when lost, twice when duplicated), each send once; then the call is over. */
  private async finish(call: SimulatedCall): Promise<void> {
    const report = simulatedReports[call.outcome]!;
    const sends = call.outcome === SimulatedOutcome.lostWebhook ? 0 : call.outcome === SimulatedOutcome.duplicateWebhook ? 2 : 1;
    const body = JSON.stringify({ batchId: call.batchId, contactNumber: call.contactNumber, callId: call.callId, ...report, ...echoAndArtefacts(call, report, this.options.summaryBytes) });
    const id = `msg_${randomUUID().replaceAll('-', '')}`;
    for (let n = 0; n < sends; n++) {
      const headers = signCallWebhook(this.options.secret, id, Math.floor((this.options.signingClock ?? this.options.clock).now() / 1000), body);
      const response = await sendOnce({ url: call.callbackUrl, method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body, timeoutMs: 10_000 }).catch(
        (error: unknown) => ({ status: 0, text: String(error) }),
      );
      call.responses.push({ status: response.status, body: response.text });
    }
    call.ended = true;
    this.live--;
  }

  private track(promise: Promise<void>): void {
    this.sends.add(promise);
    void promise.finally(() => this.sends.delete(promise));
  }

  private pick(): SimulatedOutcome {
    const mix = { ...DEFAULT_MIX, ...this.options.mix };
    const total = Object.values(mix).reduce((a, b) => a + b, 0);
    if (total <= 0) return SimulatedOutcome.completed;
    let draw = this.options.rng.float() * total;
    for (const outcome of simulatedOutcomes) {
      draw -= mix[outcome];
      if (draw < 0) return outcome;
    }
    return SimulatedOutcome.completed;
  }
}

/**
 * What a result carries beside its code, as a real AI call handler's would: the placer's echo (placedAt,
 * externalId) and, for a call in which someone spoke, its artefacts — links on a host of the simulator's own
 * (never fetched) and a summary that reads the contact's variables, as an agent's prompt would.
 */
function echoAndArtefacts(call: SimulatedCall, report: { durationSeconds: number; emptyTranscription: boolean }, summaryBytes = 0): Record<string, unknown> {
  const { durationSeconds } = report;
  const echo = { ...(call.placedAt !== undefined ? { placedAt: call.placedAt } : {}), ...(call.externalId !== undefined ? { externalId: call.externalId } : {}) };
  // A call with nothing said (no pickup, voicemail silence) has no recording worth linking.
  if (durationSeconds <= 0 || report.emptyTranscription) return echo;
  const name = call.variables?.['first_name'] ?? call.variables?.['name'];
  return {
    ...echo,
    recordingUrl: `https://recordings.simulator.invalid/${encodeURIComponent(call.callId)}.mp3`,
    transcriptUrl: `https://recordings.simulator.invalid/${encodeURIComponent(call.callId)}.txt`,
    summary: `Simulated call of ${durationSeconds} s${name !== undefined ? ` with ${String(name)}` : ''}.`.padEnd(summaryBytes, ' .'),
    endedReason: 'simulated',
  };
}
