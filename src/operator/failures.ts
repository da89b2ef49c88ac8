import type { ProtoFailure } from '@temporalio/common';

export interface FailureSummary {
  /** Type of the outermost failure: the ApplicationFailure type, or the kind of failure. */
  type: string;
  message: string;
  /** The innermost cause: the error that started it all (the outermost failure if it has none). */
  rootCause: { type: string; message: string };
}

export function causeChain(failure: ProtoFailure | null | undefined): ProtoFailure[] {
  const chain: ProtoFailure[] = [];
  // Bounded, in case a malformed failure refers back to itself.
  for (let f = failure; f && chain.length < 64; f = f.cause) chain.push(f);
  return chain;
}

/**
 * The application's own type for an ApplicationFailure, else the kind of failure; an activity
 * failure adds the activity type, since its message only says "Activity task failed".
 */
export function failureType(failure: ProtoFailure): string {
  if (failure.applicationFailureInfo) return failure.applicationFailureInfo.type || 'Error';
  if (failure.activityFailureInfo) {
    const activity = failure.activityFailureInfo.activityType?.name;
    return activity ? `ActivityFailure(${activity})` : 'ActivityFailure';
  }
  if (failure.childWorkflowExecutionFailureInfo) return 'ChildWorkflowFailure';
  if (failure.timeoutFailureInfo) return 'TimeoutFailure';
  if (failure.canceledFailureInfo) return 'CancelledFailure';
  if (failure.terminatedFailureInfo) return 'TerminatedFailure';
  if (failure.serverFailureInfo) return 'ServerFailure';
  if (failure.resetWorkflowFailureInfo) return 'ResetWorkflowFailure';
  return 'Failure';
}

export function summarizeFailure(failure: ProtoFailure | null | undefined): FailureSummary {
  const chain = causeChain(failure);
  const outer = chain[0];
  const root = chain[chain.length - 1];
  if (!outer || !root) {
    return { type: '-', message: '-', rootCause: { type: '-', message: '-' } };
  }
  return {
    type: failureType(outer),
    message: outer.message ?? '',
    rootCause: { type: failureType(root), message: root.message ?? '' },
  };
}
