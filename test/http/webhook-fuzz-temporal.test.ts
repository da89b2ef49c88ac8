import { WorkflowNotFoundError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { FastifyInstance } from 'fastify';
import fc from 'fast-check';
import { PAYMENT_WEBHOOK_PATH } from '../../src/http/routes/payment-webhook';
import { paymentWorkflowId } from '../../src/shared/constants';
import type { PaymentWorkflowInput } from '../../src/shared/payment';
import { createPaymentStarter } from '../../src/temporal/payment-starter';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import { buildWebhookApp, expectAccepted } from '../support/webhook';
import {
  againstFirst,
  bodyArb,
  classifyBody,
  eventIdArb,
  FUZZ_RUNS,
  fuzzParameters,
  fuzzTimeoutMs,
  hmacHex,
  isAuthentic,
  type Outcome,
  signatureNoiseArb,
  signatureValues,
} from './webhook-fuzz-arbitraries';

/*
 * The webhook fuzzed against a real Temporal dev server (no worker: started workflows stay
 * Running, which is all the webhook promises). Fewer runs than the in-process properties: each
 * one is a gRPC round trip or two. `FUZZ_RUNS=20000 npx jest test/http/webhook-fuzz` runs
 * FUZZ_RUNS / 20 here.
 */

const SECRETS = { current: 'temporal-fuzz-current', previous: 'temporal-fuzz-previous' };
const BODY_LIMIT = 4096;
const RUNS = Math.max(60, Math.ceil(FUZZ_RUNS / 20));

let env: TestWorkflowEnvironment;
let app: FastifyInstance;

beforeAll(async () => {
  env = await createDevServerEnv();
  app = await buildWebhookApp({
    config: {
      PAYMENT_WEBHOOK_SECRET: SECRETS.current,
      PAYMENT_WEBHOOK_SECRET_PREVIOUS: SECRETS.previous,
      WEBHOOK_BODY_LIMIT_BYTES: BODY_LIMIT,
      WEBHOOK_AUTH_FAILURE_LIMIT: 0,
    },
    // Generous: a slow start on a loaded machine is not what this property is about (a 503).
    payments: createPaymentStarter(env.client, { startTimeoutMs: 20_000 }),
  });
});

afterAll(async () => {
  await app?.close();
  await env?.teardown();
});

async function exists(eventId: string): Promise<boolean> {
  try {
    await env.client.workflow.getHandle(paymentWorkflowId(eventId)).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

/** Makes forged and burst event IDs unique across runs. */
let serial = 0;

describe('webhook fuzzing against a real Temporal dev server', () => {
  it(
    'starts a workflow for every valid signed payment, none for a forged one, and never 5xx',
    async () => {
      const counts = { accepted: 0, duplicates: 0, conflicts: 0, forged: 0 };
      const delivered: string[] = [];
      // What each event ID was first accepted with, by any branch: the model of the server's.
      const firstInputs = new Map<string, PaymentWorkflowInput>();
      const request = fc.oneof(
        // A fresh, valid payment event; one delivered before (the provider's retry); or an
        // event ID delivered before with another amount (a conflict).
        {
          arbitrary: fc
            .tuple(eventIdArb, fc.nat(), fc.constantFrom('fresh', 'again', 'again', 'conflicting'))
            .map(([id, n, delivery]) => ({ kind: 'payment' as const, id, n, delivery })),
          weight: 4,
        },
        // A payment event whose signature is forged in any of the ways the fuzzer knows.
        {
          arbitrary: signatureNoiseArb
            .filter((n) => !['current', 'previous', 'uppercase', 'padded'].includes(n.kind))
            .map((noise) => ({ kind: 'forged' as const, noise })),
          weight: 3,
        },
        // Any hostile body, validly signed: whatever it is, no 5xx.
        {
          arbitrary: bodyArb(BODY_LIMIT).map((raw) => ({ kind: 'hostile' as const, raw })),
          weight: 3,
        },
      );

      await fc.assert(
        fc.asyncProperty(request, async (r) => {
          if (r.kind === 'payment') {
            const previous =
              r.delivery !== 'fresh' && delivered.length > 0
                ? firstInputs.get(delivered[r.n % delivered.length]!)
                : undefined;
            const input = previous
              ? { ...previous, amount: previous.amount + (r.delivery === 'conflicting' ? 1 : 0) }
              : {
                  eventId: `ok.${delivered.length}.${r.id}`.slice(0, 200),
                  orderId: 1 + r.n,
                  amount: 100,
                };
            const raw = JSON.stringify({
              id: input.eventId,
              event: 'payment.succeeded',
              order_id: input.orderId,
              amount: input.amount,
            });
            const res = await app.inject({
              method: 'POST',
              url: PAYMENT_WEBHOOK_PATH,
              payload: raw,
              headers: { 'x-payment-signature': hmacHex(SECRETS.current, raw) },
            });
            expect(res.headers['x-workflow-id']).toBe(paymentWorkflowId(input.eventId));
            expect(await exists(input.eventId)).toBe(true);
            if (previous !== undefined && r.delivery === 'conflicting') {
              expect(res.statusCode).toBe(409);
              expect(res.json<{ error: string }>().error).toMatch(/different amount/);
              counts.conflicts++;
              return;
            }
            expectAccepted(res);
            if (previous === undefined) {
              delivered.push(input.eventId);
              firstInputs.set(input.eventId, input);
            }
            counts[previous === undefined ? 'accepted' : 'duplicates']++;
            return;
          }
          if (r.kind === 'forged') {
            serial += 1;
            const id = `FORGED.${process.pid}.${serial}`;
            const raw = JSON.stringify({
              id,
              event: 'payment.succeeded',
              order_id: 1,
              amount: 100,
            });
            const signatures = signatureValues(r.noise, SECRETS, raw);
            expect(isAuthentic(signatures, [SECRETS.current, SECRETS.previous], raw)).toBe(false);
            const res = await app.inject({
              method: 'POST',
              url: PAYMENT_WEBHOOK_PATH,
              payload: raw,
              headers: signatures.length === 0 ? {} : { 'x-payment-signature': signatures },
            });
            expect(res.statusCode).toBe(401);
            expect(await exists(id)).toBe(false);
            counts.forged++;
            return;
          }
          const res = await app.inject({
            method: 'POST',
            url: PAYMENT_WEBHOOK_PATH,
            payload: r.raw,
            headers: { 'x-payment-signature': hmacHex(SECRETS.previous, r.raw) },
          });
          const expected: Outcome =
            r.raw.length > BODY_LIMIT
              ? { status: 413, kind: 'too-large' }
              : againstFirst(classifyBody(r.raw), (id) => firstInputs.get(id));
          expect(res.statusCode).toBe(expected.status);
          if (expected.kind === 'accepted') {
            expect(await exists(expected.input.eventId)).toBe(true);
            if (!firstInputs.has(expected.input.eventId)) {
              firstInputs.set(expected.input.eventId, expected.input);
            }
          }
        }),
        fuzzParameters(RUNS),
      );
      expect(counts.accepted).toBeGreaterThan(0);
      expect(counts.conflicts).toBeGreaterThan(0);
      expect(counts.forged).toBeGreaterThan(0);
    },
    fuzzTimeoutMs(RUNS, 50),
  );

  it(
    'accepts a burst of concurrent valid deliveries, duplicates included, without a 5xx',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.nat(9), { minLength: 1, maxLength: 30 }),
          fc.string({ minLength: 1, maxLength: 8 }).map((s) => Buffer.from(s).toString('hex')),
          async (picks, tag) => {
            serial += 1;
            const ids = picks.map((p) => `burst.${serial}.${tag}.${p}`);
            const replies = await Promise.all(
              ids.map((id) => {
                const raw = JSON.stringify({
                  id,
                  event: 'payment.succeeded',
                  order_id: 7,
                  amount: 1,
                });
                return app.inject({
                  method: 'POST',
                  url: PAYMENT_WEBHOOK_PATH,
                  payload: raw,
                  headers: { 'x-payment-signature': hmacHex(SECRETS.current, raw) },
                });
              }),
            );
            expect(replies.map((r) => r.statusCode)).toEqual(ids.map(() => 200));
            for (const id of new Set(ids)) {
              const count = await env.client.workflow.count(
                `WorkflowId = "${paymentWorkflowId(id)}"`,
              );
              // Visibility lags the start; it may not list it yet, but never lists it twice.
              expect(count.count).toBeLessThanOrEqual(1);
              expect(await exists(id)).toBe(true);
            }
          },
        ),
        fuzzParameters(Math.max(10, Math.ceil(RUNS / 5))),
      );
    },
    fuzzTimeoutMs(RUNS, 200),
  );
});
