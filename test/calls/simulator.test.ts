import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { CallPlacerSimulator, simulatorMixEnv } from '../../functions/calls/local/simulator.ts';
import type { SimulatedOutcome } from '../../functions/calls/local/simulator.ts';
import { callWebhookVerifier } from '../../functions/calls/signature.ts';
import { ManualClock } from '../../functions/platform/clock.ts';
import { seededRng } from '../../functions/platform/rng.ts';
import { TEST_SECRET } from '../support/calls.ts';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** A receiver that records each signed result it gets, and checks its signature. */
async function receiver(clock: ManualClock) {
  const verify = callWebhookVerifier(TEST_SECRET);
  const received: { id: string; body: any }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c)).on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      try {
        verify(req.headers as Record<string, string>, raw, clock.now());
      } catch {
        res.writeHead(401).end('{}');
        return;
      }
      received.push({ id: String(req.headers['webhook-id']), body: JSON.parse(raw) });
      res.writeHead(200).end('{"outcome":"applied"}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  closers.push(() => new Promise((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/calls/webhook`, received };
}

async function place(simulator: CallPlacerSimulator, callbackUrl: string, contactNumber: string) {
  return fetch(simulator.url, { method: 'POST', body: JSON.stringify({ batchId: 'b1', contactNumber, round: 1, callId: `call_${contactNumber.slice(1)}`, callbackUrl }) });
}

describe('call-placer simulator', () => {
  it('AnswersThePlacerContractAndPostsSignedResultsOnTheClockLostOnesNeverDuplicatesTwice', async () => {
    const clock = new ManualClock();
    const { url, received } = await receiver(clock);
    const script: Record<string, SimulatedOutcome> = { '+1001': 'shortCall', '+1002': 'lostWebhook', '+1003': 'duplicateWebhook', '+1004': 'placerRefuses' };
    const simulator = await CallPlacerSimulator.start({ clock, rng: seededRng(1), secret: TEST_SECRET, script: ({ contactNumber }) => script[contactNumber]! });
    closers.push(() => simulator.close());
    expect((await place(simulator, url, '+1001')).status).toBe(202);
    expect((await place(simulator, url, '+1002')).status).toBe(202);
    expect((await place(simulator, url, '+1003')).status).toBe(202);
    expect((await place(simulator, url, '+1004')).status).toBe(503);
    expect((await fetch(simulator.url, { method: 'POST', body: '{"batchId":"b1"}' })).status).toBe(400);
    // The placer contract names the call: a request without its callId is refused.
    expect((await fetch(simulator.url, { method: 'POST', body: JSON.stringify({ batchId: 'b1', contactNumber: '+1005', round: 1, callbackUrl: url }) })).status).toBe(400);
    expect(simulator.inProgress).toBe(3);
    expect(received).toEqual([]);

    clock.advance(3_000 + 4_000); // the short call: 3 s ringing + 4 s
    await simulator.idle();
    // The result names the call the placer was asked for.
    expect(received.map((r) => r.body)).toEqual([{ batchId: 'b1', contactNumber: '+1001', callId: 'call_1001', code: 'FAILED', emptyTranscription: true, durationSeconds: 4 }]);
    clock.advance(63_000 - 7_000); // the lost and the duplicated call: 3 s + 60 s
    await simulator.idle();
    const duplicate = received.filter((r) => r.body.contactNumber === '+1003');
    expect(duplicate).toHaveLength(2);
    expect(duplicate[0]!.id).toBe(duplicate[1]!.id);
    expect(received.filter((r) => r.body.contactNumber === '+1002')).toEqual([]);
    expect(simulator.inProgress).toBe(0);
    expect(simulator.maxInProgress).toBe(3);
    // Every send was signed with the intake secret, at the clock's time: the receiver verified each.
    expect(simulator.calls.flatMap((c) => c.responses.map((r) => r.status))).toEqual([200, 200, 200]);
  });

  it('DrawsTheSameOutcomesFromTheSameSeed', async () => {
    const draw = async (seed: number) => {
      const clock = new ManualClock();
      const simulator = await CallPlacerSimulator.start({ clock, rng: seededRng(seed), secret: TEST_SECRET });
      closers.push(() => simulator.close());
      for (let i = 0; i < 30; i++) await place(simulator, 'http://127.0.0.1:9/unused', `+1${1000 + i}`);
      return simulator.calls.map((c) => c.outcome);
    };
    const a = await draw(5);
    expect(await draw(5)).toEqual(a);
    expect(new Set(a).size).toBeGreaterThan(4);
  });

  it('ReadsItsMixFromTheEnvironmentAndRefusesNonsense', () => {
    expect(simulatorMixEnv.parse('noPickup=3, completed=0')).toEqual({ noPickup: 3, completed: 0 });
    expect(simulatorMixEnv.safeParse('ringing=2').success).toBe(false);
    expect(simulatorMixEnv.safeParse('noPickup=-1').success).toBe(false);
  });
});
