import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { paymentWorkflowId } from '../../src/shared/constants';
import { disputeWorkflowId, refundWorkflowId } from '../../src/shared/payment-events';
import {
  OrderIdSearchAttribute,
  PaymentEventIdSearchAttribute,
} from '../../src/shared/search-attributes';
import { createPaymentStarter, TemporalUnavailableError } from '../../src/temporal/payment-starter';
import { disputeEvent, refundEvent } from '../support/ledger-events';
import { standInClient } from '../support/stand-in-client';

// The starter against a stand-in client (test/support/stand-in-client.ts).

const input = { eventId: 'evt_1', orderId: 42, amount: 5400 };
const workflowId = paymentWorkflowId(input.eventId);

const alreadyStarted = () =>
  Promise.reject(new WorkflowExecutionAlreadyStartedError('exists', workflowId, 'paymentWorkflow'));

describe('createPaymentStarter', () => {
  it('starts a first delivery with one call, its order ID and amount in the memo', async () => {
    const { client, calls } = standInClient({});
    const started = await createPaymentStarter(client, { startTimeoutMs: 1000 }).start(input);
    expect(started).toEqual({ workflowId, duplicate: false });
    expect(calls.starts[0]?.[1].memo).toEqual({ orderId: 42, eventId: 'evt_1', amount: 5400 });
    // No lookup on the path every first delivery takes.
    expect(calls.describe).toEqual([]);
  });

  it('reads what a duplicate was first started with from the existing run', async () => {
    const { client, calls } = standInClient({
      start: alreadyStarted,
      describe: () => Promise.resolve({ memo: { orderId: 42, eventId: 'evt_1', amount: 100 } }),
    });
    const started = await createPaymentStarter(client, { startTimeoutMs: 1000 }).start(input);
    expect(started).toEqual({
      workflowId,
      duplicate: true,
      existing: { known: true, orderId: 42, amount: 100 },
    });
    expect(calls.describe).toEqual([workflowId]);
  });

  it('leaves out what the memo does not hold (runs started before it held the amount)', async () => {
    const { client } = standInClient({
      start: alreadyStarted,
      describe: () => Promise.resolve({ memo: { orderId: 42, eventId: 'evt_1' } }),
    });
    const started = await createPaymentStarter(client, { startTimeoutMs: 1000 }).start(input);
    expect(started).toMatchObject({ existing: { known: true, orderId: 42, amount: undefined } });
  });

  it.each([
    [
      'the run is gone (deleted after retention)',
      new WorkflowNotFoundError('not found', workflowId, undefined),
      /gone/,
    ],
    ['describe fails', new Error('deadline exceeded'), /could not be described/],
  ])(
    'reports a duplicate as such when %s, with the reason, never as unavailable',
    async (_l, err, reason) => {
      const { client } = standInClient({
        start: alreadyStarted,
        describe: () => Promise.reject(err),
      });
      const started = await createPaymentStarter(client, { startTimeoutMs: 1000 }).start(input);
      expect(started).toEqual({
        workflowId,
        duplicate: true,
        existing: { known: false, reason: expect.stringMatching(reason), cause: err },
      });
    },
  );

  it('asks once for a storm of concurrent duplicates of one event', async () => {
    let answer: (value: unknown) => void = () => {};
    const { client, calls } = standInClient({
      start: alreadyStarted,
      describe: () => new Promise((resolve) => (answer = resolve)),
    });
    const starter = createPaymentStarter(client, { startTimeoutMs: 1000 });
    const storm = Promise.all(Array.from({ length: 20 }, () => starter.start(input)));
    await new Promise((resolve) => setImmediate(resolve));
    answer({ memo: { orderId: 42, amount: 5400 } });
    const results = await storm;
    expect(calls.describe).toHaveLength(1);
    expect(new Set(results.map((r) => JSON.stringify(r))).size).toBe(1);

    // A later duplicate asks again: nothing is kept beyond the calls in flight.
    const later = starter.start(input);
    await new Promise((resolve) => setImmediate(resolve));
    answer({ memo: { orderId: 42, amount: 5400 } });
    await later;
    expect(calls.describe).toHaveLength(2);
  });

  it('still reports any other start failure as Temporal unavailable', async () => {
    const { client } = standInClient({ start: () => Promise.reject(new Error('unavailable')) });
    await expect(
      createPaymentStarter(client, { startTimeoutMs: 1000 }).start(input),
    ).rejects.toBeInstanceOf(TemporalUnavailableError);
  });

  it('sets the order ID and event ID as search attributes, and the redelivery policies', async () => {
    const { client, calls } = standInClient({});
    await createPaymentStarter(client, { startTimeoutMs: 1000 }).start(input);
    expect(calls.starts[0]?.[1]).toMatchObject({
      workflowId,
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: [
        { key: OrderIdSearchAttribute, value: 42 },
        { key: PaymentEventIdSearchAttribute, value: 'evt_1' },
      ],
    });
  });

  /** A refusal as the client throws it: its own error, the gRPC status as the cause. */
  const refusal = (code: number, details: string) =>
    Object.assign(new Error('Failed to start Workflow'), {
      cause: Object.assign(new Error(`${code} ${details}`), { code, details }),
    });

  /** What the starter throws when the start fails with `failure`. */
  async function startFailure(failure: Error): Promise<TemporalUnavailableError> {
    const { client } = standInClient({ start: () => Promise.reject(failure) });
    const error = await createPaymentStarter(client, { startTimeoutMs: 1000 })
      .start(input)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    if (!(error instanceof TemporalUnavailableError)) {
      throw new Error(`expected TemporalUnavailableError, got ${String(error)}`);
    }
    return error;
  }

  it.each([
    [
      3,
      'Namespace default has no mapping defined for search attribute OrderId',
      /lacks a search attribute .*OrderId.*npm run temporal:setup/,
    ],
    [
      3,
      'WorkflowId length exceeds limit',
      /refused the start as invalid \(WorkflowId length exceeds limit\)/,
    ],
    [
      5,
      'Namespace nowhere is not found',
      /namespace does not exist \(Namespace nowhere is not found\)/,
    ],
    [
      7,
      'Request unauthorized',
      /refused the credentials \(Request unauthorized\).*npm run ops -- doctor/,
    ],
    [16, 'invalid API key', /refused the credentials \(invalid API key\)/],
  ])(
    "names a refusal with gRPC code %i as a configuration problem, in the server's words",
    async (code, details, problem) => {
      const failure = refusal(code, details);
      const error = await startFailure(failure);
      expect(error).toMatchObject({ name: 'TemporalUnavailableError', cause: failure });
      expect(error.message).toBe('Temporal is unavailable');
      expect(error.configurationProblem).toMatch(problem);
    },
  );

  it.each([
    ['an outage (UNAVAILABLE)', refusal(14, 'connection refused')],
    ['a deadline (DEADLINE_EXCEEDED)', refusal(4, 'deadline exceeded')],
    ['no gRPC status at all', new Error('socket hang up')],
  ])('calls %s transient: no configuration problem', async (_label, failure) => {
    expect((await startFailure(failure)).configurationProblem).toBeUndefined();
  });

  it("reads the server's words from the error nearest the gRPC status, at most five causes deep", async () => {
    const wrapped = (levels: number, inner: Error) => {
      let e: Error = inner;
      for (let i = 0; i < levels; i++) e = Object.assign(new Error(`wrapper ${i}`), { cause: e });
      return e;
    };
    const status = () =>
      Object.assign(new Error('5 NOT_FOUND'), { code: 5, details: 'Namespace x is not found' });
    expect((await startFailure(wrapped(4, status()))).configurationProblem).toMatch(
      /\(Namespace x is not found\)/,
    );
    // Past five levels neither the code nor the words are looked for: not a configuration problem.
    expect((await startFailure(wrapped(5, status()))).configurationProblem).toBeUndefined();
    // A message stands in for the details when the status has none.
    const bare = Object.assign(new Error('Failed to start Workflow'), {
      cause: Object.assign(new Error('3 INVALID_ARGUMENT: bad memo'), { code: 3 }),
    });
    expect((await startFailure(bare)).configurationProblem).toBe(
      'Temporal refused the start as invalid (3 INVALID_ARGUMENT: bad memo)',
    );
  });
});

describe('createPaymentStarter: refund and dispute intakes', () => {
  const refund = refundEvent('pi_1');
  const dispute = disputeEvent('pi_1', { orderId: 42 });
  const starts = [
    ['refund', 'refundWorkflow', refundWorkflowId(refund.eventId), refund],
    ['dispute', 'disputeWorkflow', disputeWorkflowId(dispute.eventId), dispute],
  ] as const;

  it.each(starts)(
    'starts a %s once, its event as the input and in the memo, within the start deadline',
    async (kind, type, id, event) => {
      const { client, calls } = standInClient({});
      const starter = createPaymentStarter(client, { startTimeoutMs: 60_000 });
      const before = Date.now();
      const started = await (kind === 'refund'
        ? starter.startRefund(refund)
        : starter.startDispute(dispute));
      expect(started).toEqual({ workflowId: id, duplicate: false });
      expect(calls.starts.map(([started]) => started)).toEqual([type]);
      expect(calls.starts[0]?.[1]).toMatchObject({
        workflowId: id,
        args: [event],
        memo: { eventId: event.eventId, paymentRef: 'pi_1', amount: event.amount },
        workflowIdConflictPolicy: 'FAIL',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
      });
      expect(calls.deadlines[0]).toBeGreaterThanOrEqual(before + 60_000);
      expect(calls.deadlines[0]).toBeLessThanOrEqual(Date.now() + 60_000);
    },
  );

  it('tags a start with the order ID the event names, and an event naming none with nothing', async () => {
    const { client, calls } = standInClient({});
    const starter = createPaymentStarter(client, { startTimeoutMs: 1000 });
    await starter.startDispute(dispute);
    await starter.startRefund(refund);
    expect(calls.starts[0]?.[1].typedSearchAttributes).toEqual([
      { key: OrderIdSearchAttribute, value: 42 },
    ]);
    expect(calls.starts[1]?.[1].typedSearchAttributes).toEqual([]);
  });

  it.each(starts)(
    'answers a %s delivered again as a duplicate, with no lookup of the first run',
    async (kind, _type, id, event) => {
      const { client, calls } = standInClient({ start: alreadyStarted });
      const starter = createPaymentStarter(client, { startTimeoutMs: 1000 });
      const started = await (kind === 'refund'
        ? starter.startRefund(refund)
        : starter.startDispute(dispute));
      expect(started).toEqual({
        workflowId: id,
        duplicate: true,
        existing: { known: true, orderId: event.orderId, amount: undefined },
      });
      expect(calls.describe).toEqual([]);
    },
  );
});
