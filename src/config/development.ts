import { doc, integer, port } from './fields';
import { z } from 'zod';

/**
 * What only `npm start` and the demos use: the embedded Temporal dev server, the local stand-ins
 * of the partners, and delays that make a behaviour visible. Production sets none of them.
 */
export const developmentFields = {
  TEMPORAL_DEV_PORT: doc(
    port(7233),
    'gRPC port of the embedded dev server (`npm start` without `TEMPORAL_ADDRESS`); `npm run ops` looks there when `TEMPORAL_ADDRESS` is unset',
  ),
  TEMPORAL_UI_PORT: doc(port(8233), 'Web UI port of the embedded dev server'),
  TEMPORAL_DEV_DB: doc(
    z.string().default('./data/temporal.db'),
    'persistence file of the embedded dev server',
  ),
  WAREHOUSE_SIMULATOR_PORT: doc(
    port(4001),
    'port of the warehouse simulator `npm start` runs when `WAREHOUSE_API_URL` is unset',
  ),
  WAREHOUSE_SIMULATOR_STATE: doc(
    z.string().min(1).default('./data/warehouse-simulator.json'),
    'where the simulator keeps its shipments and requests across restarts, so a replay after a crash is still answered as one',
  ),
  SMTP_SINK_PORT: doc(
    port(2525),
    'port of the local SMTP sink `npm start` runs when `SMTP_URL` is unset (it logs each mail)',
  ),
  STOCK_AGGREGATION_DELAY_MS: doc(
    integer(0, 15 * 60_000).default(0),
    'makes each stock aggregation take at least this long, to watch the schedule’s SKIP overlap policy',
  ),
  INVOICE_DELAY_MS: doc(
    integer(0, 60_000).default(0),
    'makes each invoice take at least this long, to watch a slow heavy queue beside fast payments',
  ),
};

/** Where the embedded dev server of `npm start` listens (TEMPORAL_DEV_PORT, on loopback). */
export function embeddedTemporalAddress(config: { TEMPORAL_DEV_PORT: number }): string {
  return `127.0.0.1:${config.TEMPORAL_DEV_PORT}`;
}
