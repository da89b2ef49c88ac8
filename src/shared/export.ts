import { defineQuery } from '@temporalio/workflow';

/**
 * The order export as every process sees it: the workflow that runs it, the heavy activities
 * that write it, and `npm run ops -- batch` that starts and watches it. Its IDs, query, input, result
 * and file format are wire contracts: changing one strands exports already running.
 */

/** Export IDs name a directory: letters, digits, `_`, `-`, `.`, not starting with a dot. */
export const EXPORT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;

/** Workflow ID of one export. */
export function exportWorkflowId(exportId: string): string {
  return `export-orders-${exportId}`;
}

/** Columns of `orders.csv`, in order (its header line). */
export const EXPORT_COLUMNS = [
  'id',
  'user_id',
  'customer_email',
  'status',
  'total_amount',
  'shipment_status',
  'confirmation_sent_at',
  'refund_review_requested_at',
  'created_at',
  'updated_at',
] as const;

/** The joined export, `<EXPORT_DIR>/<exportId>/orders.csv`. */
export const EXPORT_FILE = 'orders.csv';
/** Which chunk holds which orders, next to the joined export. */
export const EXPORT_INDEX_FILE = 'index.json';

/** One entry of `index.json`. */
export interface ExportIndexChunk {
  chunk: number;
  file: string;
  rows: number;
  firstOrderId: number | null;
  lastOrderId: number | null;
}

export interface ExportOrdersInput {
  /** Names the export and its directory, `<EXPORT_DIR>/<exportId>/`. */
  exportId: string;
  /** First and last order ID to export, both included; open when left out. */
  fromOrderId?: number;
  toOrderId?: number;
  /** Orders per chunk (default 100). */
  chunkSize?: number;
  /** Chunks per run before continue-as-new (default 50). */
  chunksPerRun?: number;
  /** Carried over by continue-as-new; absent on the first run. */
  state?: ExportState;
}

/** Where an export stands between runs. */
export interface ExportState {
  /**
   * Highest order ID the export covers, fixed when it starts, so orders created meanwhile do not
   * move the end; null when the range held no orders.
   */
  lastOrderId: number | null;
  /** The last order ID already written; the next chunk starts after it. */
  cursor: number;
  totalOrders: number;
  totalChunks: number;
  doneChunks: number;
  exportedOrders: number;
  /** Chunk attempts that failed and were retried, over all runs. */
  failedAttempts: number;
  /** 1 for the first run, +1 per continue-as-new. */
  run: number;
}

export type ExportPhase = 'planning' | 'exporting' | 'finishing' | 'completed';

/** Answer of the `progress` query. `total` and `done` count chunks. */
export interface ExportProgress {
  exportId: string;
  phase: ExportPhase;
  total: number;
  done: number;
  failedAttempts: number;
  /** The chunk being written now (1-based), null between chunks. */
  currentChunk: number | null;
  totalOrders: number;
  exportedOrders: number;
  run: number;
}

/** The files of a finished export. */
export interface ExportFiles {
  /** Absolute path of the joined CSV (with its header line). */
  file: string;
  /** Absolute path of `index.json`: which chunk holds which orders. */
  indexFile: string;
  rows: number;
  bytes: number;
  sha256: string;
}

export interface ExportOrdersResult extends ExportFiles {
  exportId: string;
  chunks: number;
  failedAttempts: number;
  /** Runs the export took (continue-as-new). */
  runs: number;
}

/** How far an export has come; answered by the export workflow while it runs. */
export const exportProgressQuery = defineQuery<ExportProgress>('progress');
