import Fastify, { type FastifyInstance } from 'fastify';
import { z } from 'zod';
import { loadWarehouseState, stateWriter } from './warehouse-state';

/**
 * A local stand-in for the warehouse partner API, for development and tests. It behaves like a
 * well-made partner API (idempotency keys honoured, replays answered with the original result)
 * and can be switched into the failure modes that the payment flow must survive.
 *
 * A shipment is `requested` until someone at the warehouse ships it (here: the control endpoint
 * `PUT /_simulator/shipments/{ref}`, or `npm run simulate -- warehouse ship <orderId>`); until
 * then `POST /v1/shipments/{ref}/cancel` cancels it, with the idempotency rules of real partner
 * APIs (Stripe's, for one): the same key replays the first answer, whatever happened since; the
 * same key with another request is a 422; an unknown shipment is a 404; a shipped one a 409
 * `already_shipped`. A second cancel under a new key of a shipment already cancelled answers 200
 * with the cancellation that stands (not a 409): cancelling is what the caller wants, and it is
 * done, so a caller that lost its key (or never had one in common with an earlier caller) is not
 * sent to a person for nothing. `{ref}` is the shipment ID or the caller's own reference, the
 * Idempotency-Key the shipment was created with (the order flow keeps no shipment IDs).
 */

export type WarehouseMode =
  | { kind: 'ok' }
  /** 4xx: the request is wrong and will stay wrong. */
  | { kind: 'reject'; status: number }
  /** 429 with a Retry-After header, in seconds or as an HTTP date. */
  | { kind: 'rate_limit'; retryAfter: string }
  /** 5xx: the partner is down. */
  | { kind: 'unavailable'; status: number }
  /** Answers correctly, but only after a delay (to provoke client timeouts). */
  | { kind: 'slow'; delayMs: number };

/** One request as the warehouse saw it, whatever it answered. */
export interface ReceivedRequest {
  at: string;
  idempotencyKey: string | undefined;
  orderId: unknown;
  status: number;
}

export type ShipmentState = 'requested' | 'shipped' | 'cancelled';

export interface Shipment {
  shipmentId: string;
  orderId: number;
  idempotencyKey: string;
  createdAt: string;
  status: ShipmentState;
  /** When it was cancelled (status `cancelled`). */
  cancelledAt?: string;
}

/** One cancel request as the warehouse saw it, whatever it answered. */
export interface ReceivedCancel {
  at: string;
  idempotencyKey: string | undefined;
  ref: string;
  /** The order of the shipment it named; null when it named none the warehouse knows. */
  orderId: number | null;
  status: number;
}

/** The first answer to a cancel under one Idempotency-Key: what a replay of the key gets. */
interface CancelAnswer {
  ref: string;
  status: number;
  body: unknown;
}

export interface WarehouseSimulator {
  app: FastifyInstance;
  /** Every request received, in order (including rejected and replayed ones). */
  readonly requests: ReceivedRequest[];
  /** Shipments actually created: one per idempotency key. */
  readonly shipments: ReadonlyMap<string, Shipment>;
  /** Every cancel request received, in order (including rejected and replayed ones). */
  readonly cancels: ReceivedCancel[];
  /**
   * Marks a shipment (by shipment ID or creation key) shipped, as the warehouse's people would;
   * false when there is none, or it was cancelled (nothing left to ship).
   */
  ship(ref: string): Promise<boolean>;
  /** Switch the failure mode; with `times`, the mode applies to that many requests, then back to ok. */
  setMode(mode: WarehouseMode, times?: number): void;
  reset(): void;
  listen(port: number, host?: string): Promise<string>;
  close(): Promise<void>;
}

const shipmentBody = z.object({ order_id: z.number().int().positive() });
// A cancel names its shipment in the path; the body's reason is optional, and part of the request
// that a replayed key must repeat.
const cancelBody = z.object({ reason: z.string().max(200).optional() }).strict();
const shipmentControlBody = z.object({ status: z.literal('shipped') });

const modeBody = z.object({
  mode: z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('ok') }),
    z.object({ kind: z.literal('reject'), status: z.number().int().min(400).max(499) }),
    z.object({ kind: z.literal('rate_limit'), retryAfter: z.string().min(1) }),
    z.object({ kind: z.literal('unavailable'), status: z.number().int().min(500).max(599) }),
    z.object({ kind: z.literal('slow'), delayMs: z.number().int().min(0).max(600_000) }),
  ]),
  times: z.number().int().positive().optional(),
});

export interface WarehouseSimulatorOptions {
  /**
   * A JSON file that keeps the shipments (and the most recent requests) across restarts, as a
   * real partner's database would: after `npm start` is stopped or killed and started again,
   * a repeated request is still answered as a replay, and a doubled shipment would show.
   * Unset: in memory only (tests).
   */
  stateFile?: string;
}

export function createWarehouseSimulator(
  options: WarehouseSimulatorOptions = {},
): WarehouseSimulator {
  const app = Fastify({ logger: false });
  const requests: ReceivedRequest[] = [];
  const shipments = new Map<string, Shipment>();
  const cancels: ReceivedCancel[] = [];
  const cancelAnswers = new Map<string, CancelAnswer>();
  let mode: WarehouseMode = { kind: 'ok' };
  let remaining: number | undefined;
  let nextShipment = 1;

  if (options.stateFile) {
    const saved = loadWarehouseState(options.stateFile);
    if (saved) {
      nextShipment = saved.nextShipment;
      for (const shipment of saved.shipments) shipments.set(shipment.idempotencyKey, shipment);
      requests.push(...saved.requests.map((r) => ({ ...r, idempotencyKey: r.idempotencyKey })));
      cancels.push(...saved.cancels.map((c) => ({ ...c, idempotencyKey: c.idempotencyKey })));
      for (const { key, ...answer } of saved.cancelAnswers) cancelAnswers.set(key, answer);
    }
  }
  const state = stateWriter(options.stateFile, () => ({
    nextShipment,
    shipments: [...shipments.values()],
    requests,
    cancelAnswers: [...cancelAnswers].map(([key, answer]) => ({ key, ...answer })),
    cancels,
  }));
  const save = () => state.save();

  // The failure mode for this request; a counted mode falls back to ok once used up.
  const takeMode = (): WarehouseMode => {
    const current = mode;
    if (remaining !== undefined && --remaining <= 0) {
      mode = { kind: 'ok' };
      remaining = undefined;
    }
    return current;
  };

  app.post('/v1/shipments', async (request, reply) => {
    const key = request.headers['idempotency-key'];
    const idempotencyKey = typeof key === 'string' && key.length > 0 ? key : undefined;
    const body = request.body as { order_id?: unknown } | undefined;
    // Saved before the answer goes out, as a partner commits before it replies.
    const record = async (status: number) => {
      requests.push({
        at: new Date().toISOString(),
        idempotencyKey,
        orderId: body?.order_id,
        status,
      });
      await save();
    };

    const current = takeMode();
    if (current.kind === 'slow') await new Promise((r) => setTimeout(r, current.delayMs));
    if (current.kind === 'reject') {
      await record(current.status);
      return reply.code(current.status).send({ error: 'rejected by simulator' });
    }
    if (current.kind === 'rate_limit') {
      await record(429);
      return reply.code(429).header('retry-after', current.retryAfter).send({ error: 'slow down' });
    }
    if (current.kind === 'unavailable') {
      await record(current.status);
      return reply.code(current.status).send({ error: 'unavailable' });
    }

    const parsed = shipmentBody.safeParse(body);
    if (!idempotencyKey || !parsed.success) {
      await record(400);
      return reply.code(400).send({ error: 'order_id and an Idempotency-Key header are required' });
    }
    const existing = shipments.get(idempotencyKey);
    if (existing) {
      await record(200);
      return reply.code(200).header('idempotent-replayed', 'true').send(toWire(existing));
    }
    const shipment: Shipment = {
      shipmentId: `shp_${nextShipment++}`,
      orderId: parsed.data.order_id,
      idempotencyKey,
      createdAt: new Date().toISOString(),
      status: 'requested',
    };
    shipments.set(idempotencyKey, shipment);
    await record(201);
    return reply.code(201).send(toWire(shipment));
  });

  const findShipment = (ref: string): Shipment | undefined =>
    shipments.get(ref) ?? [...shipments.values()].find((s) => s.shipmentId === ref);

  // The failure modes apply here too (they are the partner's, not one endpoint's), and a counted
  // mode counts cancels and shipment requests alike.
  app.post<{ Params: { ref: string } }>('/v1/shipments/:ref/cancel', async (request, reply) => {
    const { ref } = request.params;
    const key = request.headers['idempotency-key'];
    const idempotencyKey = typeof key === 'string' && key.length > 0 ? key : undefined;
    const answer = async (status: number, body: unknown, replayed = false) => {
      cancels.push({
        at: new Date().toISOString(),
        idempotencyKey,
        ref,
        orderId: findShipment(ref)?.orderId ?? null,
        status,
      });
      // Only answers that decided something are kept for the key (as Stripe keeps no 5xx/429):
      // a replay of a 400 or an outage is a new attempt.
      if (!replayed && idempotencyKey && status < 500 && status !== 429 && status !== 400) {
        cancelAnswers.set(idempotencyKey, { ref, status, body });
      }
      await save();
      if (replayed) void reply.header('idempotent-replayed', 'true');
      return reply.code(status).send(body);
    };

    const current = takeMode();
    if (current.kind === 'slow') await new Promise((r) => setTimeout(r, current.delayMs));
    if (current.kind === 'reject') {
      return answer(current.status, { error: 'rejected by simulator' });
    }
    if (current.kind === 'rate_limit') {
      void reply.header('retry-after', current.retryAfter);
      return answer(429, { error: 'slow down' });
    }
    if (current.kind === 'unavailable') return answer(current.status, { error: 'unavailable' });

    const parsed = cancelBody.safeParse(request.body ?? {});
    if (!idempotencyKey || !parsed.success) {
      return answer(400, { error: 'an Idempotency-Key header and a valid body are required' });
    }
    const earlier = cancelAnswers.get(idempotencyKey);
    if (earlier) {
      if (earlier.ref !== ref) {
        return answer(422, {
          error: 'idempotency_key_reused',
          message: `this Idempotency-Key was used to cancel ${earlier.ref}`,
        });
      }
      return answer(earlier.status, earlier.body, true);
    }
    const shipment = findShipment(ref);
    if (!shipment) return answer(404, { error: 'shipment_not_found' });
    if (shipment.status === 'shipped') {
      return answer(409, { error: 'already_shipped', ...toWire(shipment) });
    }
    if (shipment.status === 'requested') {
      shipment.status = 'cancelled';
      shipment.cancelledAt = new Date().toISOString();
    }
    return answer(200, toWire(shipment));
  });

  // The health endpoint of the warehouse's contract (npm run ops -- doctor asks it), in the mode's
  // state: down while the simulator plays an outage, slow while it plays slowness.
  app.get('/v1/health', async (_request, reply) => {
    const current = mode;
    if (current.kind === 'slow') await new Promise((r) => setTimeout(r, current.delayMs));
    if (current.kind === 'unavailable') {
      return reply.code(current.status).send({ status: 'unavailable' });
    }
    if (current.kind === 'rate_limit') {
      return reply
        .code(429)
        .header('retry-after', current.retryAfter)
        .send({ status: 'slow down' });
    }
    return { status: 'ok' };
  });
  app.get('/_simulator/mode', async () => ({ mode, times: remaining ?? null }));

  // Control endpoints, so a developer can switch failure modes of a running stack with curl.
  app.put('/_simulator/mode', async (request, reply) => {
    const parsed = modeBody.safeParse(request.body);
    if (!parsed.success) return reply.code(400).send({ error: parsed.error.issues[0]?.message });
    simulator.setMode(parsed.data.mode, parsed.data.times);
    return { mode, times: remaining ?? null };
  });
  app.get('/_simulator/requests', async () => ({
    requests,
    cancels,
    shipments: [...shipments.values()].map(toWire),
  }));
  // What the warehouse's people do: pick, pack and ship. After this, a cancel is too late.
  app.put<{ Params: { ref: string } }>('/_simulator/shipments/:ref', async (request, reply) => {
    const parsed = shipmentControlBody.safeParse(request.body);
    if (!parsed.success)
      return reply.code(400).send({ error: 'body must be {"status":"shipped"}' });
    const shipment = findShipment(request.params.ref);
    if (!shipment) return reply.code(404).send({ error: 'shipment_not_found' });
    if (!(await simulator.ship(request.params.ref))) {
      return reply.code(409).send({ error: 'cancelled', ...toWire(shipment) });
    }
    return toWire(shipment);
  });
  app.delete('/_simulator/requests', async (_request, reply) => {
    simulator.reset();
    return reply.code(204).send();
  });

  const simulator: WarehouseSimulator = {
    app,
    requests,
    shipments,
    cancels,
    async ship(ref) {
      const shipment = findShipment(ref);
      if (!shipment || shipment.status === 'cancelled') return false;
      shipment.status = 'shipped';
      await save();
      return true;
    },
    setMode(next, times) {
      mode = next;
      remaining = times;
    },
    reset() {
      requests.length = 0;
      shipments.clear();
      cancels.length = 0;
      cancelAnswers.clear();
      mode = { kind: 'ok' };
      remaining = undefined;
      void save();
    },
    async listen(port, host = '127.0.0.1') {
      await app.listen({ port, host });
      const address = app.server.address();
      const actualPort = typeof address === 'object' && address ? address.port : port;
      return `http://${host}:${actualPort}`;
    },
    async close() {
      await app.close();
      await state.saved();
    },
  };
  return simulator;
}

function toWire(s: Shipment) {
  return {
    shipment_id: s.shipmentId,
    order_id: s.orderId,
    created_at: s.createdAt,
    status: s.status,
    ...(s.cancelledAt ? { cancelled_at: s.cancelledAt } : {}),
  };
}
