import { defineQuery } from '@temporalio/workflow';

// The order export's IDs, query, input, result and file format are wire contracts between the
// workflow, the heavy activities and `ops batch`: changing one strands exports already running.

/** Export IDs name a directory: letters, digits, `_`, `-`, `.`, not starting with a dot. */
export const EXPORT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;

export function exportWorkflowId(exportId: string): string {
  return `export-orders-${exportId}`;
}

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

export const EXPORT_FILE = 'orders.csv';
export const EXPORT_INDEX_FILE = 'index.json';

export interface ExportIndexChunk {
  chunk: number;
  file: string;
  rows: number;
  firstOrderId: number | null;
  lastOrderId: number | null;
}

export interface ExportOrdersInput {
  exportId: string;
  /** First and last order ID to export, both included; open when left out. */
  fromOrderId?: number;
  toOrderId?: number;
  /** Orders per chunk (default 100). */
  chunkSize?: number;
  /** Chunks per run before continue-as-new (default 50). */
  chunksPerRun?: number;
  state?: ExportState;
}

export interface ExportState {
  /** Fixed at the start, so orders created meanwhile do not move the end; null: no orders. */
  lastOrderId: number | null;
  cursor: number;
  totalOrders: number;
  totalChunks: number;
  doneChunks: number;
  exportedOrders: number;
  failedAttempts: number;
  run: number;
}

export type ExportPhase = 'planning' | 'exporting' | 'finishing' | 'completed';

export interface ExportProgress {
  exportId: string;
  phase: ExportPhase;
  total: number;
  done: number;
  failedAttempts: number;
  currentChunk: number | null;
  totalOrders: number;
  exportedOrders: number;
  run: number;
}

export interface ExportFiles {
  file: string;
  indexFile: string;
  rows: number;
  bytes: number;
  sha256: string;
}

export interface ExportOrdersResult extends ExportFiles {
  exportId: string;
  chunks: number;
  failedAttempts: number;
  runs: number;
}

export const exportProgressQuery = defineQuery<ExportProgress>('progress');
