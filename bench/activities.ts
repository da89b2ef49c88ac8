import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { mirrorPaymentSignal, type benchMirrorOrderWorkflow } from './workflows';

export interface BenchActivityDeps {
  /** Temporal client on the worker's connection, as the order activities get it. */
  client: Client;
}

/** The bench workflows' activities: as little work as an activity can do. */
export function createBenchActivities(deps: BenchActivityDeps) {
  return {
    /** Does nothing: what is left is Temporal's cost of one activity. */
    async noop(): Promise<void> {},

    /** The mirror of handOverToOrder: one signal-with-start, nothing else. */
    async handOverMirror(input: { orderKey: string }): Promise<void> {
      const info = Context.current().info;
      await deps.client.workflow.signalWithStart<typeof benchMirrorOrderWorkflow, [string]>(
        'benchMirrorOrderWorkflow',
        {
          workflowId: input.orderKey,
          taskQueue: info.taskQueue,
          signal: mirrorPaymentSignal,
          signalArgs: [info.workflowExecution?.workflowId ?? info.activityId],
        },
      );
    },
  };
}

export type BenchActivities = ReturnType<typeof createBenchActivities>;
