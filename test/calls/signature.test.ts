import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { SignatureError } from '../../functions/calls/errors.ts';
import { callWebhookVerifier, isWebhookSecret, signCallWebhook } from '../../functions/calls/signature.ts';

// The Standard Webhooks published test vector (standard-webhooks/standard-webhooks, libraries' tests:
// "sign function works").
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};
const headers = { 'webhook-id': VECTOR.id, 'webhook-timestamp': String(VECTOR.timestamp), 'webhook-signature': VECTOR.signature };

const refusal = (fn: () => void): string | undefined => {
  try {
    fn();
    return undefined;
  } catch (error) {
    return error instanceof SignatureError ? error.refusal : `unexpected ${String(error)}`;
  }
};

describe('call-result signature: Standard Webhooks on an injected clock', () => {
  it('ThePublishedTestVectorVerifiesAtItsOwnTime', () => {
    const verify = callWebhookVerifier(VECTOR.secret);
    expect(refusal(() => verify(headers, VECTOR.body, VECTOR.timestamp * 1000))).toBeUndefined();
    expect(signCallWebhook(VECTOR.secret, VECTOR.id, VECTOR.timestamp, VECTOR.body)['webhook-signature']).toBe(VECTOR.signature);
  });

  it('TheToleranceIsFiveMinutesEitherWayOnTheInjectedClockNotDateNow', () => {
    const verify = callWebhookVerifier(VECTOR.secret);
    const t = VECTOR.timestamp * 1000;
    // 2021 is years before Date.now(): the library's own check would refuse every one of these.
    expect(refusal(() => verify(headers, VECTOR.body, t + 300_000))).toBeUndefined();
    expect(refusal(() => verify(headers, VECTOR.body, t + 300_999))).toBeUndefined();
    expect(refusal(() => verify(headers, VECTOR.body, t + 301_000))).toBe('timestamp_too_old');
    expect(refusal(() => verify(headers, VECTOR.body, t - 300_000))).toBeUndefined();
    expect(refusal(() => verify(headers, VECTOR.body, t - 301_000))).toBe('timestamp_too_new');
  });

  it('RefusesEachBrokenPart', () => {
    const verify = callWebhookVerifier(VECTOR.secret);
    const now = VECTOR.timestamp * 1000;
    const without = (name: string) => Object.fromEntries(Object.entries(headers).filter(([k]) => k !== name));
    for (const name of Object.keys(headers)) expect(refusal(() => verify(without(name), VECTOR.body, now)), name).toBe('missing_headers');
    expect(refusal(() => verify({ ...headers, 'webhook-timestamp': 'soon' }, VECTOR.body, now))).toBe('invalid_timestamp');
    expect(refusal(() => verify({ ...headers, 'webhook-signature': VECTOR.signature.slice(0, -2) }, VECTOR.body, now))).toBe('no_matching_signature');
    expect(refusal(() => verify({ ...headers, 'webhook-signature': 'v1,' }, VECTOR.body, now))).toBe('no_matching_signature');
    expect(refusal(() => verify({ ...headers, 'webhook-id': 'msg_other' }, VECTOR.body, now))).toBe('no_matching_signature');
    expect(refusal(() => verify(headers, '{"test": 2432232315}', now))).toBe('no_matching_signature');
    expect(refusal(() => callWebhookVerifier('whsec_' + Buffer.from('another secret, 32 bytes long!!!').toString('base64'))(headers, VECTOR.body, now))).toBe(
      'no_matching_signature',
    );
  });

  it('AcceptsOneValidSignatureAmongSeveral', () => {
    const verify = callWebhookVerifier(VECTOR.secret);
    const several = { ...headers, 'webhook-signature': `v1,bm9wZQ== v2,${VECTOR.signature.slice(3)} ${VECTOR.signature}` };
    expect(refusal(() => verify(several, VECTOR.body, VECTOR.timestamp * 1000))).toBeUndefined();
  });

  it('AcceptsTwoSignatureHeaderLinesJoinedByHttpAsTheReferenceLibraryDoes', () => {
    const verify = callWebhookVerifier(VECTOR.secret);
    const wrong = 'v1,bm9wZQ==';
    // Two `webhook-signature` lines reach the receiver as one value joined with ", " (RFC 9110 §5.3).
    const joined = [`${wrong}, ${VECTOR.signature}`, `${VECTOR.signature}, ${wrong}`, `${VECTOR.signature},${wrong}`];
    const library = new Webhook(VECTOR.secret);
    const now = Math.floor(Date.now() / 1000);
    const fresh = library.sign(VECTOR.id, new Date(now * 1000), VECTOR.body);
    for (const value of joined) {
      expect(refusal(() => verify({ ...headers, 'webhook-signature': value }, VECTOR.body, VECTOR.timestamp * 1000)), value).toBeUndefined();
      // The reference library, at its own Date.now(), on the same shapes.
      const same = value.replaceAll(VECTOR.signature, fresh);
      expect(() => library.verify(VECTOR.body, { ...headers, 'webhook-timestamp': String(now), 'webhook-signature': same }), same).not.toThrow();
    }
    // Joined or not, a header with no valid signature is still refused.
    expect(refusal(() => verify({ ...headers, 'webhook-signature': `${wrong}, v1,${'A'.repeat(43)}=` }, VECTOR.body, VECTOR.timestamp * 1000))).toBe('no_matching_signature');
    expect(refusal(() => verify({ ...headers, 'webhook-signature': `v2,${VECTOR.signature.slice(3)}` }, VECTOR.body, VECTOR.timestamp * 1000))).toBe('no_matching_signature');
  });

  it('KnowsASecretFromSomethingElse', () => {
    expect(isWebhookSecret(VECTOR.secret)).toBe(true);
    expect(isWebhookSecret('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toBe(true);
    expect(isWebhookSecret('whsec_short')).toBe(false);
    expect(isWebhookSecret('not base64 at all!')).toBe(false);
    expect(isWebhookSecret('whsec_' + Buffer.from('15 bytes only..').toString('base64'))).toBe(false);
  });
});
