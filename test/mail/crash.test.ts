import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { iso } from '../../functions/platform/clock.ts';
import { ownerNotifyKind } from '../../functions/mail/kinds.ts';
import { dynamoEndpoint } from '../support/dynamo.ts';
import { mailFixture, TEST_MAIL_DOMAIN } from '../support/mail.ts';
import type { MailFixture } from '../support/mail.ts';

let fx: MailFixture | undefined;
afterEach(async () => {
  await fx?.stop();
  fx = undefined;
});

describe('send, then mark: a worker killed between the two', () => {
  it('RunsTheJobAgainTheServerGetsTheSameMessageIdTwiceAndTheMarkIsWrittenOnce', async () => {
    fx = await mailFixture();
    fx.clock.set(Date.now()); // the child process runs on the real clock
    await fx.store.putConfirmedContact('acme', 'owner@acme.test', fx.clock.now());
    // The calls pipeline's side: the job commits in its transaction; here nothing wakes it in-process.
    const prepared = fx.jobs.client.prepare(ownerNotifyKind, {
      tenantId: 'acme',
      eventId: 'evt_crash',
      template: 'batch.finalised',
      data: { batchId: 'b_1', byCode: { COMPLETED: 2 } },
    });
    await fx.commitOnly([prepared.item]);

    const child = spawn(
      process.execPath,
      ['test/support/mail-crash-worker.ts', dynamoEndpoint(), fx.tableNames.jobs, fx.tableNames.mail, fx.sink.url, TEST_MAIL_DOMAIN, prepared.id],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('sent') && resolve());
      child.once('exit', (code) => reject(new Error(`worker exited early with ${code}`)));
    });
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));

    // Sent, not marked, and the job's claim is orphaned.
    expect(fx.sink.messages()).toHaveLength(1);
    expect(await fx.store.getNotice('acme', 'evt_crash')).toBeUndefined();
    const orphan = await fx.jobs.store.mustGet(prepared.id);
    expect(orphan.state).toBe('running');

    // The rescuer finds the expired lease; the job runs again in this process.
    fx.clock.set(Date.parse(orphan.leaseUntil!) + 1);
    expect(await fx.jobs.rescuer(fx.handlers, 180_000).run()).toMatchObject({ expired: 1 });
    await fx.settle();

    const job = await fx.jobs.store.mustGet(prepared.id);
    expect(job.state).toBe('completed');
    expect(job.attempts.map((a) => a.outcome)).toEqual(['lost', 'completed']);
    const messages = fx.sink.messages();
    expect(messages).toHaveLength(2);
    expect(messages.map((m) => m.messageId)).toEqual([`<evt_crash@${TEST_MAIL_DOMAIN}>`, `<evt_crash@${TEST_MAIL_DOMAIN}>`]);
    const notice = await fx.store.getNotice('acme', 'evt_crash');
    expect(notice).toMatchObject({ status: 'sent', jobId: prepared.id, notifiedAt: job.attempts[1]!.at, messageId: `<evt_crash@${TEST_MAIL_DOMAIN}>` });

    // Any later run for the event (a redelivery, a producer's duplicate job) finds the mark: nothing sent, the mark stands.
    fx.clock.advance(60_000);
    const duplicate = await fx.notify('acme', 'evt_crash');
    await fx.settle();
    expect((await fx.jobs.store.mustGet(duplicate.id)).state).toBe('completed');
    expect(fx.sink.messages()).toHaveLength(2);
    expect(await fx.store.getNotice('acme', 'evt_crash')).toEqual(notice);
    expect(notice!.notifiedAt).not.toBe(iso(fx.clock.now()));
  });
});
