import * as z from 'zod';
import { callsEnv } from '../config.ts';
import { simulatorMixEnv } from './simulator.ts';

/**
 * The intake's signing secret when none is configured locally. Printed at start-up; never used on AWS
 * (there the API reads its secret from Secrets Manager).
 */
export const DEV_WEBHOOK_SECRET = 'whsec_cmVkaWFsLWxvY2FsLWRldmVsb3BtZW50LXNlY3JldCE=';

/** The calls context's environment for `npm start`: the AWS variables plus the simulator's. */
export const localCallsEnv = callsEnv.pick({ CALL_PLACER_URL: true, CALL_WEBHOOK_SECRET: true, CALL_TIMEOUT_SECONDS: true }).extend({
  /** Seeds the simulator's choice of outcomes (default: a fixed seed, so a run can be repeated). */
  SIMULATOR_SEED: z.coerce.number().int().min(0).default(1),
  /** The simulator's mix of outcomes, `noPickup=3,completed=2,…`. */
  SIMULATOR_MIX: simulatorMixEnv.optional(),
});
export type LocalCallsEnv = z.infer<typeof localCallsEnv>;
