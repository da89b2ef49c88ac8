import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { writeFileAtomically } from '../../src/activities/atomic-file';

/**
 * The warehouse simulator's state file (its `stateFile` option): the shipments, the answers kept
 * for cancel keys and the most recent requests, as a real partner's database would keep them
 * across restarts of `npm start`.
 */

/** Requests kept in the state file: enough to audit a dev session, bounded in size. */
const PERSISTED_REQUESTS = 10_000;

const stateSchema = z.object({
  nextShipment: z.number().int().positive(),
  shipments: z.array(
    z.object({
      shipmentId: z.string(),
      orderId: z.number(),
      idempotencyKey: z.string(),
      createdAt: z.string(),
      // Absent in files written before cancels existed: every shipment was requested then.
      status: z.enum(['requested', 'shipped', 'cancelled']).default('requested'),
      cancelledAt: z.string().optional(),
    }),
  ),
  cancelAnswers: z
    .array(z.object({ key: z.string(), ref: z.string(), status: z.number(), body: z.unknown() }))
    .default([]),
  cancels: z
    .array(
      z.object({
        at: z.string(),
        idempotencyKey: z.string().optional(),
        ref: z.string(),
        orderId: z.number().nullable(),
        status: z.number(),
      }),
    )
    .default([]),
  requests: z.array(
    z.object({
      at: z.string(),
      idempotencyKey: z.string().optional(),
      orderId: z.unknown(),
      status: z.number(),
    }),
  ),
});

export type WarehouseState = z.input<typeof stateSchema>;

/**
 * Saves what `snapshot` returns to `file` (nothing when there is no file). One write at a time,
 * each of the state as it is when the write starts: a later write never lands before an earlier
 * one and leaves an older state behind. `saved()` waits for the writes asked for so far.
 */
export function stateWriter(file: string | undefined, snapshot: () => WarehouseState) {
  let saving: Promise<void> = Promise.resolve();
  return {
    save(): Promise<void> {
      if (!file) return Promise.resolve();
      saving = saving.then(() => {
        const { requests, cancels, ...rest } = snapshot();
        return writeFileAtomically(
          file,
          JSON.stringify({
            ...rest,
            requests: requests.slice(-PERSISTED_REQUESTS),
            cancels: (cancels ?? []).slice(-PERSISTED_REQUESTS),
          }),
        );
      });
      return saving;
    },
    saved: () => saving,
  };
}

/** The saved state, or undefined when there is none yet; a file that is not ours is an error. */
export function loadWarehouseState(file: string): z.infer<typeof stateSchema> | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const parsed = stateSchema.safeParse(json);
  if (!parsed.success) {
    throw new Error(`${file} is not a warehouse simulator state file; move it away or delete it`);
  }
  return parsed.data;
}
