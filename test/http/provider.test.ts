import { z } from 'zod';
import {
  type EventKeys,
  keyed,
  namedKeys,
  type ProviderNotification,
  type ProviderVerifier,
  webhookProvider,
} from '../../src/http/providers/provider';
import { originalProvider } from '../../src/http/providers/original';
import { signBody } from '../../src/http/signature';
import type { StripeThinNotification } from '../../src/shared/thin-event';

// A provider's one entry point, read directly with a made-up scheme: the signature first, then
// the body, then its IDs as this shop's keys. Event IDs and payment references get different
// keys here, so that a test sees which of the two each field went through.

const keys: EventKeys = { eventId: (id) => `event~${id}`, paymentRef: (ref) => `ref~${ref}` };

/** Signed when the `x-sig` header says "ok"; a header `x-id` is the event ID it signs. */
const verify: ProviderVerifier = (_body, rawHeaders) => {
  const header = (name: string) => rawHeaders[rawHeaders.indexOf(name) + 1];
  if (header('x-sig') !== 'ok') return { ok: false, reason: 'bad signature' };
  const id = rawHeaders.includes('x-id') ? header('x-id') : undefined;
  return { ok: true, matchedSecret: 'current', ...(id === undefined ? {} : { id }) };
};

// `{"id"?, "order", "amount"}` is a payment; `{"skip": true}` a type not handled.
const notification: z.ZodType<ProviderNotification> = z.union([
  z.object({ skip: z.literal(true) }).transform(() => ({ kind: 'ignored' as const, type: 'x' })),
  z
    .object({ id: z.string().optional(), order: z.number(), amount: z.number() })
    .transform(({ id, order, amount }) => ({
      kind: 'payment' as const,
      type: 'paid',
      ...(id === undefined ? {} : { id }),
      orderRef: order,
      amount,
    })),
]);

const provider = webhookProvider({ name: 'acme', path: '/acme', verify, notification, keys });
const signed = ['x-sig', 'ok'];
const receive = (body: string, headers = signed) => provider.receive(Buffer.from(body), headers);

describe('webhookProvider: receive', () => {
  it('refuses a bad signature with 401 before reading the body', () => {
    expect(receive('not even JSON', ['x-sig', 'no'])).toStrictEqual({
      ok: false,
      status: 401,
      reason: 'bad signature',
    });
  });

  it('refuses a signed body that is not UTF-8, not JSON, or not what the scheme says, with 400', () => {
    expect(provider.receive(Buffer.from([0xff, 0xfe]), signed)).toStrictEqual({
      ok: false,
      status: 400,
      reason: 'body is not valid UTF-8',
    });
    expect(receive('{"order":')).toStrictEqual({
      ok: false,
      status: 400,
      reason: 'body is not valid JSON',
    });
    const wrong = receive('{"id":"evt_1","order":"12","amount":5}');
    expect(wrong.ok || wrong.status).toBe(400);
  });

  it('keys a payment by the body’s ID, and names the payment by it when no reference does', () => {
    expect(receive('{"id":"evt_1","order":12,"amount":5}')).toStrictEqual({
      ok: true,
      matchedSecret: 'current',
      event: {
        kind: 'payment',
        type: 'paid',
        eventId: 'event~evt_1',
        sentId: 'evt_1',
        orderRef: 12,
        amount: 5,
        currency: undefined,
        paymentRef: 'ref~evt_1',
      },
    });
  });

  it('takes the ID the signature covers in a header when the body has none', () => {
    const receipt = receive('{"order":12,"amount":5}', [...signed, 'x-id', 'msg_1']);
    expect(receipt.ok && receipt.event).toMatchObject({ eventId: 'event~msg_1', sentId: 'msg_1' });
  });

  it('refuses an event no ID names, rather than keying it by nothing', () => {
    expect(receive('{"order":12,"amount":5}')).toStrictEqual({
      ok: false,
      status: 400,
      reason: 'no event ID',
    });
  });

  it('passes a type it does not handle on as ignored, with no ID needed', () => {
    expect(receive('{"skip":true}')).toStrictEqual({
      ok: true,
      matchedSecret: 'current',
      event: { kind: 'ignored', type: 'x' },
    });
  });
});

describe('keyed', () => {
  it('keys a refund and a dispute by the event ID and names their payment by its reference', () => {
    const refund = {
      kind: 'refund' as const,
      refundId: 're_1',
      amount: 3,
      status: 'succeeded' as const,
    };
    const dispute = { disputeId: 'dp_1', amount: 5, status: 'opened' as const };
    const refunded = keyed({ kind: 'refund', type: 'r', paymentRef: 'pi_9', refund }, 'e1', keys);
    const disputed = keyed({ kind: 'dispute', type: 'd', paymentRef: 'pi_9', dispute }, 'e2', keys);
    const keyedAs = { paymentRef: 'ref~pi_9' };
    expect([refunded, disputed]).toStrictEqual([
      {
        kind: 'refund',
        type: 'r',
        eventId: 'event~e1',
        refund: { ...refund, eventId: 'event~e1', ...keyedAs },
      },
      {
        kind: 'dispute',
        type: 'd',
        eventId: 'event~e2',
        dispute: { ...dispute, eventId: 'event~e2', ...keyedAs },
      },
    ]);
  });

  it('keeps a payment’s own reference over the event ID', () => {
    const paid = {
      kind: 'payment' as const,
      type: 'p',
      orderRef: 1,
      amount: 5,
      paymentRef: 'pi_9',
    };
    expect(keyed(paid, 'evt_1', keys)).toMatchObject({
      eventId: 'event~evt_1',
      paymentRef: 'ref~pi_9',
    });
  });

  it('keys what the provider found unmatched and a thin event, keeping the ID as sent', () => {
    const unmatched = {
      kind: 'unmatched' as const,
      type: 'u',
      reason: 'livemode' as const,
      note: 'live',
      object: { id: 'pi_9' },
    };
    expect(keyed(unmatched, 'evt_u', keys)).toStrictEqual({
      kind: 'unmatched',
      type: 'u',
      eventId: 'event~evt_u',
      sentId: 'evt_u',
      reason: 'livemode',
      note: 'live',
      object: { id: 'pi_9' },
    });
    const notification = { id: 'evt_t' } as StripeThinNotification;
    expect(
      keyed({ kind: 'thin', type: 't', id: 'evt_t', notification }, 'evt_t', keys),
    ).toStrictEqual({
      kind: 'thin',
      type: 't',
      eventId: 'event~evt_t',
      notification,
    });
  });

  it('keys a named provider’s events and references under its name', () => {
    const named = namedKeys('stripe');
    expect([named.eventId('evt_1'), named.paymentRef('pi_1')]).toEqual([
      'stripe~evt_1',
      'stripe~pi_1',
    ]);
  });
});

describe('the contract’s provider: a payment.disputed', () => {
  const secret = 'test-webhook-secret';
  const original = originalProvider({ scheme: 'plain', secret, toleranceSeconds: 300 });
  const receiveSigned = (event: object) => {
    const body = JSON.stringify(event);
    return original.receive(Buffer.from(body), ['x-payment-signature', signBody(body, secret)]);
  };
  const disputed = {
    id: 'evt_dp',
    event: 'payment.disputed',
    order_id: 3,
    payment_id: 'evt_pay',
    amount: 5400,
    dispute_id: 'dp_1',
    status: 'opened',
  };
  /** The receipt of `disputed`, its dispute with `extra`: absent fields are absent, not undefined. */
  const dispute = (extra: object) => ({
    ok: true,
    matchedSecret: 'current',
    event: {
      kind: 'dispute',
      type: 'payment.disputed',
      eventId: 'evt_dp',
      dispute: {
        disputeId: 'dp_1',
        amount: 5400,
        status: 'opened',
        orderId: 3,
        ...extra,
        eventId: 'evt_dp',
        paymentRef: 'evt_pay',
      },
    },
  });

  it('carries the evidence deadline, in UTC, when the sender gives one, and none when not', () => {
    expect(receiveSigned(disputed)).toStrictEqual(dispute({}));
    expect(
      receiveSigned({ ...disputed, evidence_due_by: '2026-12-20T00:00:00+09:00' }),
    ).toStrictEqual(dispute({ evidenceDueBy: '2026-12-19T15:00:00.000Z' }));
  });
});
