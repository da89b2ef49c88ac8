import { createHash } from 'node:crypto';
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { stringify } from 'csv-stringify/sync';
import type { ExportedOrder, OrderExportRepository, OrderIdRange, OrderRangeSummary } from '../db';
import { FailureType } from '../shared/errors';
import {
  EXPORT_COLUMNS,
  EXPORT_FILE,
  EXPORT_ID_PATTERN,
  EXPORT_INDEX_FILE,
  type ExportFiles,
  type ExportIndexChunk,
} from '../shared/export';
import { isTemporaryFile, writeAtomically, writeFileAtomically } from './atomic-file';
import { atCrashPoint } from './crash-points';

export interface BatchActivityDeps {
  orderExport: OrderExportRepository;
  /** Root of all exports: `<exportDir>/<exportId>/`. Shared by every heavy worker. */
  exportDir: string;
}

export interface PlanOrderExportInput extends OrderIdRange {
  exportId: string;
}

export interface ExportOrdersChunkInput {
  exportId: string;
  chunk: number;
  /** The chunk holds orders with `afterOrderId < id <= toOrderId`, at most `limit` of them. */
  afterOrderId: number;
  toOrderId: number;
  limit: number;
}

export interface ExportOrdersChunkResult {
  chunk: number;
  file: string;
  rows: number;
  firstOrderId: number | null;
  lastOrderId: number | null;
  attempt: number;
}

export interface FinishOrderExportInput {
  exportId: string;
  chunks: number;
  /** Rows the chunks reported: the joined file must hold exactly these. */
  expectedRows: number;
}

export type FinishOrderExportResult = ExportFiles;

const CHUNK_FILE = /^chunk-(\d+)\.csv$/;

/** File name of chunk `n`: zero-padded, so a directory listing sorts them in order. */
export function chunkFileName(chunk: number): string {
  return `chunk-${String(chunk).padStart(5, '0')}.csv`;
}

export function createBatchActivities(deps: BatchActivityDeps) {
  const exportPath = (exportId: string, file = '') => {
    if (!EXPORT_ID_PATTERN.test(exportId)) {
      throw ApplicationFailure.create({
        type: FailureType.InvalidExportRequest,
        message: `export ID "${exportId}" must match ${String(EXPORT_ID_PATTERN)}`,
        nonRetryable: true,
      });
    }
    return path.resolve(deps.exportDir, exportId, file);
  };

  return {
    /** Fixes the last order ID (orders created meanwhile do not move the end); clears old chunks. */
    async planOrderExport(input: PlanOrderExportInput): Promise<OrderRangeSummary> {
      const dir = exportPath(input.exportId);
      const entries = await readdir(dir).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return [];
        throw err;
      });
      await atCrashPoint('planOrderExport.clear', async () => {
        for (const name of entries) {
          if (CHUNK_FILE.test(name) || isTemporaryFile(name)) {
            await rm(path.join(dir, name), { force: true });
          }
        }
      });
      const summary = await deps.orderExport.summarizeRange({
        fromOrderId: input.fromOrderId,
        toOrderId: input.toOrderId,
      });
      Context.current().log.info('order export planned', { exportId: input.exportId, ...summary });
      return summary;
    },

    /** Idempotent: the same input reads the same orders and replaces the same file. */
    async exportOrdersChunk(input: ExportOrdersChunkInput): Promise<ExportOrdersChunkResult> {
      const file = exportPath(input.exportId, chunkFileName(input.chunk));
      const orders = await deps.orderExport.readPage({
        afterOrderId: input.afterOrderId,
        toOrderId: input.toOrderId,
        limit: input.limit,
      });
      await atCrashPoint('exportOrdersChunk.write', () =>
        writeFileAtomically(file, orders.map(csvRecord).join('')),
      );
      return {
        chunk: input.chunk,
        file,
        rows: orders.length,
        firstOrderId: orders[0]?.id ?? null,
        lastOrderId: orders.at(-1)?.id ?? null,
        attempt: Context.current().info.attempt,
      };
    },

    /**
     * Both files written atomically. ExportIncomplete (no retry) when a chunk is missing or the
     * rows do not add up: on several machines, EXPORT_DIR must be one shared directory.
     */
    async finishOrderExport(input: FinishOrderExportInput): Promise<FinishOrderExportResult> {
      const ctx = Context.current();
      const file = exportPath(input.exportId, EXPORT_FILE);
      const indexFile = exportPath(input.exportId, EXPORT_INDEX_FILE);
      const hash = createHash('sha256');
      const index: ExportIndexChunk[] = [];
      let bytes = 0;
      let rows = 0;
      await atCrashPoint('finishOrderExport.join', () =>
        writeAtomically(file, async (handle) => {
          const write = async (data: Buffer) => {
            hash.update(data);
            bytes += data.length;
            await handle.write(data);
          };
          await write(Buffer.from(stringify([EXPORT_COLUMNS], CSV_OPTIONS)));
          for (let chunk = 1; chunk <= input.chunks; chunk++) {
            const name = chunkFileName(chunk);
            const data = await readFile(exportPath(input.exportId, name)).catch(
              (err: NodeJS.ErrnoException) => {
                if (err.code !== 'ENOENT') throw err;
                throw incomplete(input, `chunk ${chunk} (${name}) is missing`);
              },
            );
            const records = scanRecords(data);
            index.push({ chunk, file: name, ...records });
            rows += records.rows;
            await write(data);
            ctx.heartbeat({ chunk });
          }
          if (rows !== input.expectedRows) {
            throw incomplete(input, `the chunks hold ${rows} rows, ${input.expectedRows} expected`);
          }
        }),
      );
      const sha256 = hash.digest('hex');
      await atCrashPoint('finishOrderExport.index', () =>
        writeFileAtomically(
          indexFile,
          `${JSON.stringify(
            {
              exportId: input.exportId,
              file: EXPORT_FILE,
              columns: EXPORT_COLUMNS,
              rows,
              bytes,
              sha256,
              chunks: index,
            },
            null,
            2,
          )}\n`,
        ),
      );
      ctx.log.info('order export joined', { exportId: input.exportId, file, rows, bytes });
      return { file, indexFile, rows, bytes, sha256 };
    },
  };
}

export type BatchActivities = ReturnType<typeof createBatchActivities>;

function incomplete(input: FinishOrderExportInput, what: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: FailureType.ExportIncomplete,
    message: `export ${input.exportId} is incomplete: ${what} (every heavy worker must share one EXPORT_DIR)`,
    details: [{ exportId: input.exportId, chunks: input.chunks, expectedRows: input.expectedRows }],
    nonRetryable: true,
  });
}

/**
 * RFC 4180 with CRLF. A field a spreadsheet would run as a formula (leading `=`, `+`, `-`, `@`,
 * tab or CR) gets a leading `'`: opening the export never executes what a customer typed.
 */
const CSV_OPTIONS = { record_delimiter: 'windows', escape_formulas: true } as const;

export function csvRecord(order: ExportedOrder): string {
  return stringify(
    [
      [
        order.id,
        order.userId,
        order.customerEmail,
        order.status,
        order.totalAmount,
        order.shipmentStatus,
        order.confirmationSentAt,
        order.refundReviewRequestedAt,
        order.createdAt,
        order.updatedAt,
      ],
    ],
    CSV_OPTIONS,
  );
}

export function csvField(value: string | number | null): string {
  return stringify([[value]], CSV_OPTIONS).slice(0, -'\r\n'.length);
}

/** Line breaks inside quotes do not end a record; also reads the first and last order ID. */
function scanRecords(data: Buffer): Omit<ExportIndexChunk, 'chunk' | 'file'> {
  const LF = 0x0a;
  const QUOTE = 0x22;
  const COMMA = 0x2c;
  const idAt = (start: number) => {
    const end = data.indexOf(COMMA, start);
    return Number(data.subarray(start, end < 0 ? data.length : end).toString('ascii'));
  };
  let rows = 0;
  let quoted = false;
  let lastStart = 0;
  for (let i = 0; i < data.length; i++) {
    const byte = data[i];
    if (byte === QUOTE) quoted = !quoted;
    else if (byte === LF && !quoted) {
      rows += 1;
      if (i + 1 < data.length) lastStart = i + 1;
    }
  }
  return {
    rows,
    firstOrderId: rows > 0 ? idAt(0) : null,
    lastOrderId: rows > 0 ? idAt(lastStart) : null,
  };
}
