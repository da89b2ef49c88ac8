import type { Client } from '@temporalio/client';
import {
  exportProgressQuery,
  type ExportOrdersResult,
  type ExportProgress,
} from '../shared/export';
import type { exportOrdersWorkflow } from '../workflows/batch';
import { type CliIo, EXIT_OK, EXIT_PROBLEM } from './io';
import { errorMessage } from './temporal-session';

const BAR_WIDTH = 30;

export type ExportStatus =
  | { kind: 'running'; progress: ExportProgress }
  | { kind: 'completed'; result: ExportOrdersResult }
  | { kind: 'closed'; status: string; reason: string };

export async function exportStatus(client: Client, workflowId: string): Promise<ExportStatus> {
  const handle = client.workflow.getHandle<typeof exportOrdersWorkflow>(workflowId);
  const description = await handle.describe();
  const status = description.status.name;
  if (status === 'RUNNING') {
    return { kind: 'running', progress: await handle.query(exportProgressQuery) };
  }
  if (status === 'COMPLETED') return { kind: 'completed', result: await handle.result() };
  const reason = await handle.result().then(
    () => status,
    (err: unknown) => errorMessage((err as { cause?: unknown }).cause ?? err),
  );
  return { kind: 'closed', status, reason };
}

export function report(io: CliIo, workflowId: string, status: ExportStatus): number {
  switch (status.kind) {
    case 'running':
      io.out(progressLine(status.progress));
      return EXIT_OK;
    case 'completed': {
      const r = status.result;
      io.out(
        progressLine({
          exportId: r.exportId,
          phase: 'completed',
          total: r.chunks,
          done: r.chunks,
          failedAttempts: r.failedAttempts,
          currentChunk: null,
          totalOrders: r.rows,
          exportedOrders: r.rows,
          run: r.runs,
        }),
      );
      io.out(
        `Export ${r.exportId} completed: ${number(r.rows)} orders in ${number(r.chunks)} chunks.`,
      );
      io.out(`  ${r.file}  (${number(r.bytes)} bytes, sha256 ${r.sha256})`);
      io.out(`  ${r.indexFile}`);
      return EXIT_OK;
    }
    case 'closed':
      io.err(`Export ${workflowId} ended ${status.status}: ${status.reason}`);
      if (status.status === 'FAILED') {
        io.err(`Resume it from the chunk that failed: npm run ops -- retry ${workflowId}`);
      }
      return EXIT_PROBLEM;
  }
}

export function progressLine(p: ExportProgress): string {
  if (p.phase === 'planning') return `[${'-'.repeat(BAR_WIDTH)}]    counting the orders to export…`;
  const ratio = p.total === 0 ? 1 : Math.min(p.done / p.total, 1);
  const filled = Math.round(ratio * BAR_WIDTH);
  const bar = `[${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}]`;
  const percent = `${Math.floor(ratio * 100)}%`.padStart(4);
  const now =
    p.phase === 'finishing'
      ? 'joining the chunks'
      : p.phase === 'completed'
        ? 'completed'
        : p.currentChunk === null
          ? 'between chunks'
          : `chunk ${p.currentChunk}`;
  return [
    `${bar} ${percent}`,
    `${number(p.done)}/${number(p.total)} chunks`,
    `${number(p.exportedOrders)}/${number(p.totalOrders)} orders`,
    `${p.failedAttempts} failed attempt${p.failedAttempts === 1 ? '' : 's'}`,
    now,
    `run ${p.run}`,
  ].join('  ');
}

function number(n: number): string {
  return n.toLocaleString('en-US');
}
