import {
  ActivityFailure,
  ApplicationFailure,
  continueAsNew,
  log,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { HeavyActivities } from '../activities/heavy';
import { FailureType, NON_RETRYABLE_FAILURE_TYPES } from '../shared/errors';
import {
  EXPORT_ID_PATTERN,
  exportProgressQuery,
  type ExportOrdersInput,
  type ExportOrdersResult,
  type ExportPhase,
} from '../shared/export';

export const EXPORT_CHUNK_SIZE = 100;
/** Each chunk adds about 6 events: a run stays near 300 events (the server's limit is 51,200). */
export const EXPORT_CHUNKS_PER_RUN = 50;

// A chunk takes milliseconds: one minute only catches a hung worker (statements give up after
// 5 s). 10 attempts, 1 s doubling to 1 minute (about 6 minutes) ride out a database restart;
// then the export fails (one alert) and `ops retry` resumes it from that chunk.
const { planOrderExport, exportOrdersChunk } = proxyActivities<HeavyActivities>({
  startToCloseTimeout: '1 minute',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 10,
    nonRetryableErrorTypes: [
      ...NON_RETRYABLE_FAILURE_TYPES,
      FailureType.InvalidExportRequest,
      FailureType.ExportIncomplete,
    ],
  },
});

// Joining reads every chunk back: 1,000,000 orders are about 150 MB, a minute on a slow disk.
// 30 minutes start-to-close bounds a hung attempt; it heartbeats per chunk file, so a crashed
// worker is noticed after 30 s. Missing or short chunks are not retried (ExportIncomplete).
const { finishOrderExport } = proxyActivities<HeavyActivities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '30 seconds',
  retry: {
    initialInterval: '5 seconds',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 5,
    nonRetryableErrorTypes: [FailureType.InvalidExportRequest, FailureType.ExportIncomplete],
  },
});

/** Chunks follow a keyset cursor on the order ID, so a retried chunk rewrites the same file. */
export async function exportOrdersWorkflow(input: ExportOrdersInput): Promise<ExportOrdersResult> {
  checkInput(input);
  const chunkSize = input.chunkSize ?? EXPORT_CHUNK_SIZE;
  const chunksPerRun = input.chunksPerRun ?? EXPORT_CHUNKS_PER_RUN;
  let state = input.state;
  let phase: ExportPhase = state ? 'exporting' : 'planning';
  let currentChunk: number | null = null;

  setHandler(exportProgressQuery, () => ({
    exportId: input.exportId,
    phase,
    total: state?.totalChunks ?? 0,
    done: state?.doneChunks ?? 0,
    failedAttempts: state?.failedAttempts ?? 0,
    currentChunk,
    totalOrders: state?.totalOrders ?? 0,
    exportedOrders: state?.exportedOrders ?? 0,
    run: state?.run ?? 1,
  }));

  if (!state) {
    const plan = await planOrderExport({
      exportId: input.exportId,
      fromOrderId: input.fromOrderId,
      toOrderId: input.toOrderId,
    });
    state = {
      lastOrderId: plan.lastOrderId,
      cursor: (plan.firstOrderId ?? 1) - 1,
      totalOrders: plan.count,
      totalChunks: Math.ceil(plan.count / chunkSize),
      doneChunks: 0,
      exportedOrders: 0,
      failedAttempts: 0,
      run: 1,
    };
    log.info('order export planned', { exportId: input.exportId, ...state });
  }
  phase = 'exporting';

  for (let chunksThisRun = 0; state.lastOrderId !== null && state.cursor < state.lastOrderId;) {
    if (chunksThisRun >= chunksPerRun || workflowInfo().continueAsNewSuggested) {
      // A fresh history for the next chunks; the progress travels in the input.
      await continueAsNew<typeof exportOrdersWorkflow>({
        ...input,
        state: { ...state, run: state.run + 1 },
      });
    }
    const chunk: number = state.doneChunks + 1;
    currentChunk = chunk;
    let written;
    try {
      written = await exportOrdersChunk({
        exportId: input.exportId,
        chunk,
        afterOrderId: state.cursor,
        toOrderId: state.lastOrderId,
        limit: chunkSize,
      });
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      throw ApplicationFailure.create({
        type: FailureType.ExportFailed,
        message: `export ${input.exportId} stopped at chunk ${chunk} of ${state.totalChunks}: ${err.cause?.message ?? err.message}`,
        details: [{ exportId: input.exportId, chunk, ...state }],
        nonRetryable: true,
        cause: err,
      });
    }
    chunksThisRun += 1;
    currentChunk = null;
    state = {
      ...state,
      // A short page means nothing is left up to the end of the range.
      cursor: written.rows < chunkSize ? state.lastOrderId : written.lastOrderId!,
      doneChunks: chunk,
      // Orders created inside the range after planning can add a chunk.
      totalChunks: Math.max(state.totalChunks, chunk),
      exportedOrders: state.exportedOrders + written.rows,
      failedAttempts: state.failedAttempts + (written.attempt - 1),
    };
  }

  phase = 'finishing';
  const finished = await finishOrderExport({
    exportId: input.exportId,
    chunks: state.doneChunks,
    expectedRows: state.exportedOrders,
  });
  // Planned from a count taken at the start; what was written is what counts now.
  state = { ...state, totalChunks: state.doneChunks, totalOrders: state.exportedOrders };
  phase = 'completed';
  log.info('order export completed', { exportId: input.exportId, ...finished });
  return {
    ...finished,
    exportId: input.exportId,
    chunks: state.doneChunks,
    failedAttempts: state.failedAttempts,
    runs: state.run,
  };
}

function checkInput(input: ExportOrdersInput): void {
  const problems: string[] = [];
  if (typeof input.exportId !== 'string' || !EXPORT_ID_PATTERN.test(input.exportId)) {
    problems.push(`exportId must match ${String(EXPORT_ID_PATTERN)}`);
  }
  for (const key of ['fromOrderId', 'toOrderId'] as const) {
    const value = input[key];
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 1)) {
      problems.push(`${key} must be a positive whole number`);
    }
  }
  if (
    input.fromOrderId !== undefined &&
    input.toOrderId !== undefined &&
    input.fromOrderId > input.toOrderId
  ) {
    problems.push('fromOrderId must not be above toOrderId');
  }
  for (const key of ['chunkSize', 'chunksPerRun'] as const) {
    const value = input[key];
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 1 || value > 10_000)) {
      problems.push(`${key} must be a whole number from 1 to 10000`);
    }
  }
  if (problems.length > 0) {
    throw ApplicationFailure.create({
      type: FailureType.InvalidExportRequest,
      message: `invalid export request: ${problems.join('; ')}`,
      details: [{ exportId: input.exportId, problems }],
      nonRetryable: true,
    });
  }
}
