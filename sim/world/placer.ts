import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { classifyCallReport } from '../../functions/calls/classify.ts';
import type { Classification } from '../../functions/calls/classify.ts';
import { signCallWebhook } from '../../functions/calls/signature.ts';
import { simulatedReports } from '../../functions/calls/local/simulator.ts';
import type { SimulatedOutcome } from '../../functions/calls/local/simulator.ts';
import type { SimClock } from '../clock.ts';
import type { FaultInjector } from '../faults.ts';
import { hashDraw } from '../plan.ts';
import type { Activity, Scopes } from '../scope.ts';

/**
 * The call placer and the AI call handler behind it, as the simulation's world: it answers the placer
 * contract and, after each call's length on the simulation clock, posts the signed result to the
 * intake. A call's outcome is drawn from the seed and its callId, so it does not depend on the order
 * calls arrive in. The plan's placer faults make it time out, refuse, never report, report twice (the
 * second time with another outcome), report late (held until the batch's next round has started) or
 * out of order (held until the batch's next result went first).
 *
 * Like a real sender of webhooks, it sends a result again when the intake answers 5xx or cannot be
 * reached (after 2 s, 10 s, 60 s and 5 min of simulated time); that is the world's retry, not redial's.
 */

/** The outcomes a call may have, by weight (the local simulator's reports). */
const MIX: readonly [SimulatedOutcome, number][] = [
  ['noPickup', 3],
  ['sipFailure', 1],
  ['shortCall', 1],
  ['genuineFail', 1],
  ['completed', 4],
  ['userRejection', 1],
  ['temporaryUnavailable', 1],
  ['invalidNumber', 1],
];

/** What the placer sent for a call, and what the intake answered. */
export interface SentReport {
  outcome: SimulatedOutcome;
  code: string;
  emptyTranscription: boolean;
  durationSeconds: number;
  /** The intake's answers, one per send (a 5xx is followed by another send). */
  responses: { status: number; outcome?: string }[];
}

/** A call, as the placer saw it. */
export interface PlacedCall {
  callId: string;
  batchId: string;
  contactNumber: string;
  round: number;
  callbackUrl: string;
  /** When its dial committed, as the dialer says (the `now` the dial group was decided at: ISO). */
  placedAt?: string;
  /** Placer requests for this call (more than one would be a dial sent twice). */
  requests: number;
  /** The runs of the dial job that sent each request. */
  runs: number[][];
  /**
   * How the placer answered the dialer: accepted (the answer reached it), refused, or late (the dialer had
   * stopped waiting: a timeout fault, or a machine too loaded to read the answer in time).
   */
  answer: 'accepted' | 'refused' | 'late';
  acceptedAt: number;
  reports: SentReport[];
  /** Results not sent yet (held or scheduled). */
  pending: number;
}

const RESEND_DELAYS_MS = [2_000, 10_000, 60_000, 300_000];

export class SimPlacer {
  readonly calls = new Map<string, PlacedCall>();
  url = '';
  private server: Server | undefined;
  private readonly options: {
    clock: SimClock;
    activity: Activity;
    scopes: Scopes;
    faults: FaultInjector;
    seed: number;
    secret: string;
    /** How long the dialer waits for the placer (a timeout answers later than this). */
    placerTimeoutMs: number;
    /** The intake's call timeout: a result held for a later round that never comes is sent after it. */
    callTimeoutMs: number;
    /** Told of each call it accepts. */
    onAccepted: (callId: string, batchId: string) => void;
    /** The agent's part of an accepted call (its calendar tools: sim/world/calendar-agent.ts). */
    duringCall?: (call: PlacedCall) => void;
  };
  /** Results held until the contact's next call has started (placer.reportsLate). */
  private readonly lateHolds: { batchId: string; contactNumber: string; round: number; send: () => void; cancel: () => void }[] = [];
  /** Results held until the batch's next result went first (placer.outOfOrder). */
  private readonly orderHolds: { batchId: string; send: () => void; cancel: () => void }[] = [];
  private readonly timers = new Set<() => void>();
  private closed = false;

  constructor(options: SimPlacer['options']) {
    this.options = options;
  }

  async start(): Promise<void> {
    const server = createServer((req, res) => void this.serve(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.server = server;
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/calls`;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const cancel of this.timers) cancel();
    await new Promise<void>((resolve) => {
      if (!this.server) return resolve();
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  /** Results held or scheduled but not sent. */
  pendingResults(): number {
    let n = 0;
    for (const call of this.calls.values()) n += call.pending;
    return n;
  }

  /** What a report classifies as, for a batch whose shortest conversation is `minSeconds`. */
  static classify(report: SentReport, minSeconds: number): Classification {
    return classifyCallReport(report, minSeconds);
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Whether the dialer gave up before the answer was on its way (it closes the connection).
    let late = false;
    res.once('close', () => {
      if (!res.writableFinished) late = true;
    });
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    let body: { batchId: string; contactNumber: string; round: number; callId: string; callbackUrl: string; placedAt?: string };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
    } catch {
      res.writeHead(400).end();
      return;
    }
    const { clock, faults, scopes } = this.options;
    // The dial job's side effect: a crash "after the side effect" comes after this.
    const runs = scopes.sideEffect(`calls.dial:${body.batchId}:${body.round}`);
    const known = this.calls.get(body.callId);
    if (known) {
      // A dial sent twice for one call: recorded (an invariant counts it), answered as before.
      known.requests++;
      known.runs.push(runs);
      res.writeHead(202).end('{"accepted":true}');
      return;
    }
    const call: PlacedCall = { ...body, requests: 1, runs: [runs], answer: 'accepted', acceptedAt: clock.now(), reports: [], pending: 0 };
    this.calls.set(body.callId, call);
    this.releaseLate(body.batchId, body.contactNumber, body.round);

    const fault = faults.take(
      ['placer.timeout', 'placer.refuse', 'placer.neverReports', 'placer.reportsTwice', 'placer.reportsLate', 'placer.outOfOrder'],
      () => true,
      () => `call ${body.callId} (${body.batchId} ${body.contactNumber} round ${body.round})`,
    );
    if (fault?.kind === 'placer.refuse') {
      call.answer = 'refused';
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"no capacity"}');
      return;
    }
    this.options.onAccepted(body.callId, body.batchId);
    this.options.duringCall?.(call);
    const outcome = this.outcomeOf(body.callId, 'first');
    // The result comes 1–10 s after the call is accepted: the reported duration is evidence to classify,
    // not time to wait (a shorter wait keeps a dialer waiting for a slot from polling for minutes).
    const resultAt = clock.now() + 1_000 + Math.floor(hashDraw(this.options.seed, `${body.callId}:delay`) * 9_000);
    if (fault?.kind !== 'placer.neverReports') {
      const send = () => this.send(call, outcome);
      if (fault?.kind === 'placer.reportsLate') this.holdLate(call, send);
      else if (fault?.kind === 'placer.outOfOrder') this.holdOrder(call, resultAt, send);
      else this.schedule(call, resultAt, send);
      if (fault?.kind === 'placer.reportsTwice') {
        const second = this.outcomeOf(body.callId, 'second');
        this.schedule(call, resultAt + 5_000 + Math.floor(hashDraw(this.options.seed, `${body.callId}:gap`) * 55_000), () => this.send(call, second));
      }
    }
    if (fault?.kind === 'placer.timeout') {
      // The call goes ahead; no answer until the dialer has stopped waiting (it closes the connection).
      call.answer = 'late';
      const late = setTimeout(() => {
        if (!res.writableEnded && !res.destroyed) res.writeHead(202).end('{"accepted":true}');
      }, this.options.placerTimeoutMs * 2);
      res.once('close', () => clearTimeout(late));
      return;
    }
    // An answer the dialer stopped waiting for before it was sent is late, whatever the placer meant.
    if (late || res.destroyed) call.answer = 'late';
    res.once('close', () => {
      if (late) call.answer = 'late';
    });
    res.writeHead(202, { 'content-type': 'application/json' }).end('{"accepted":true}');
  }

  private outcomeOf(callId: string, which: string): SimulatedOutcome {
    const total = MIX.reduce((n, [, w]) => n + w, 0);
    let draw = hashDraw(this.options.seed, `${callId}:${which}`) * total;
    for (const [outcome, weight] of MIX) {
      draw -= weight;
      if (draw < 0) return outcome;
    }
    return 'completed';
  }

  private schedule(call: PlacedCall, at: number, send: () => void): void {
    call.pending++;
    const cancel = this.options.clock.setTimer(
      at,
      () => {
        this.timers.delete(cancel);
        call.pending--;
        send();
      },
      'placer',
    );
    this.timers.add(cancel);
  }

  /** Held until the contact's call of a later round reaches the placer, or long after the call timed out. */
  private holdLate(call: PlacedCall, send: () => void): void {
    call.pending++;
    let done = false;
    const release = () => {
      if (done) return;
      done = true;
      call.pending--;
      send();
    };
    const cancel = this.options.clock.setTimer(call.acceptedAt + this.options.callTimeoutMs + 10 * 60_000, () => {
      this.timers.delete(cancel);
      this.lateHolds.splice(this.lateHolds.indexOf(hold), 1);
      release();
    }, 'placer');
    this.timers.add(cancel);
    const hold = { batchId: call.batchId, contactNumber: call.contactNumber, round: call.round, send: release, cancel };
    this.lateHolds.push(hold);
  }

  private releaseLate(batchId: string, contactNumber: string, round: number): void {
    for (const hold of [...this.lateHolds]) {
      if (hold.batchId !== batchId || hold.contactNumber !== contactNumber || hold.round >= round) continue;
      this.lateHolds.splice(this.lateHolds.indexOf(hold), 1);
      hold.cancel();
      this.timers.delete(hold.cancel);
      // A moment after the contact's next call was placed: that call is in progress when this result lands.
      this.schedule({ pending: 0 } as PlacedCall, this.options.clock.now() + 1_000, hold.send);
    }
  }

  /** Held until another result of the batch has been sent first, or a few minutes after it was due. */
  private holdOrder(call: PlacedCall, dueAt: number, send: () => void): void {
    call.pending++;
    let done = false;
    const release = () => {
      if (done) return;
      done = true;
      call.pending--;
      send();
    };
    const cancel = this.options.clock.setTimer(dueAt + 5 * 60_000, () => {
      this.timers.delete(cancel);
      this.orderHolds.splice(this.orderHolds.indexOf(hold), 1);
      release();
    }, 'placer');
    this.timers.add(cancel);
    const hold = { batchId: call.batchId, send: release, cancel };
    this.orderHolds.push(hold);
  }

  private releaseOrder(batchId: string): void {
    for (const hold of [...this.orderHolds]) {
      if (hold.batchId !== batchId) continue;
      this.orderHolds.splice(this.orderHolds.indexOf(hold), 1);
      hold.cancel();
      this.timers.delete(hold.cancel);
      this.schedule({ pending: 0 } as PlacedCall, this.options.clock.now() + 500, hold.send);
    }
  }

  /** Sends a result, and sends it again on a 5xx or a connection failure. */
  private send(call: PlacedCall, outcome: SimulatedOutcome): void {
    if (this.closed) return;
    const report = simulatedReports[outcome]!;
    const sent: SentReport = { outcome, ...report, responses: [] };
    call.reports.push(sent);
    const body = JSON.stringify({ batchId: call.batchId, contactNumber: call.contactNumber, callId: call.callId, ...report });
    const id = `msg_${call.callId}_${call.reports.length}`;
    const attempt = (n: number): void => {
      void this.options.activity.track(async () => {
        const headers = signCallWebhook(this.options.secret, id, Math.floor(Date.now() / 1000), body);
        let status: number;
        let answer: string | undefined;
        try {
          const response = await fetch(call.callbackUrl, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers }, signal: AbortSignal.timeout(10_000) });
          status = response.status;
          const text = await response.text();
          try {
            answer = (JSON.parse(text) as { outcome?: string }).outcome;
          } catch {
            answer = undefined;
          }
        } catch {
          status = 0;
        }
        sent.responses.push({ status, ...(answer ? { outcome: answer } : {}) });
        const delay = RESEND_DELAYS_MS[n];
        if ((status === 0 || status >= 500) && delay !== undefined && !this.closed) {
          this.schedule(call, this.options.clock.now() + delay, () => attempt(n + 1));
        }
      });
    };
    attempt(0);
    this.releaseOrder(call.batchId);
  }
}
