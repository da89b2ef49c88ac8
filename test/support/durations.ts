import type { google } from '@temporalio/proto';

/** Milliseconds of a protobuf Duration from a history event (0 when unset). */
export function durationToMs(duration: google.protobuf.IDuration | null | undefined): number {
  if (!duration) return 0;
  return Number(duration.seconds ?? 0) * 1000 + Math.round((duration.nanos ?? 0) / 1e6);
}
