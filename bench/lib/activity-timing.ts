import { Context } from '@temporalio/activity';
import type {
  ActivityExecuteInput,
  ActivityInboundCallsInterceptor,
  ActivityInterceptorsFactory,
  Next,
} from '@temporalio/worker';
import { mean, percentile } from './stats';

/** Per activity type: how long attempts waited in the task queue, and how long they ran. */
export interface ActivityTimingSummary {
  type: string;
  count: number;
  /** Scheduled by the workflow until started on the worker: server and poller latency. */
  queueMsMean: number;
  queueMsP99: number;
  /** The activity function itself: our code and its I/O. */
  runMsMean: number;
  runMsP99: number;
}

/**
 * Collects, inside a worker process, where each activity's time goes. Scheduled-to-started is
 * measured on the server's timestamps and the worker's clock, which are one clock on one machine.
 */
export class ActivityTimings {
  private samples = new Map<string, { queueMs: number[]; runMs: number[] }>();
  /** Order ID → when `setShipmentStatus('requested')` returned (epoch ms): "shipment requested". */
  private shipments = new Map<number, number>();

  /** The interceptor factory to add to the worker's `interceptors.activity`. */
  readonly interceptor: ActivityInterceptorsFactory = () => ({ inbound: new Recorder(this) });

  record(type: string, queueMs: number, runMs: number): void {
    let entry = this.samples.get(type);
    if (!entry) this.samples.set(type, (entry = { queueMs: [], runMs: [] }));
    entry.queueMs.push(queueMs);
    entry.runMs.push(runMs);
  }

  shipmentRequested(orderId: number, at: number): void {
    this.shipments.set(orderId, at);
  }

  /** When each order's shipment was marked requested, since the last call; starts over. */
  takeShipments(): Array<[number, number]> {
    const taken = [...this.shipments];
    this.shipments = new Map();
    return taken;
  }

  /** What was recorded since the last call, summarised; starts over. */
  take(): ActivityTimingSummary[] {
    const summary = [...this.samples].map(([type, { queueMs, runMs }]) => ({
      type,
      count: runMs.length,
      queueMsMean: mean(queueMs),
      queueMsP99: percentile(queueMs, 99),
      runMsMean: mean(runMs),
      runMsP99: percentile(runMs, 99),
    }));
    this.samples = new Map();
    return summary;
  }
}

class Recorder implements ActivityInboundCallsInterceptor {
  constructor(private readonly timings: ActivityTimings) {}

  async execute(
    input: ActivityExecuteInput,
    next: Next<ActivityInboundCallsInterceptor, 'execute'>,
  ): Promise<unknown> {
    const info = Context.current().info;
    const started = Date.now();
    try {
      const result = await next(input);
      const [arg] = input.args as Array<{ orderId?: number; status?: string } | undefined>;
      if (info.activityType === 'setShipmentStatus' && arg?.status === 'requested') {
        this.timings.shipmentRequested(arg.orderId!, Date.now());
      }
      return result;
    } finally {
      this.timings.record(
        info.activityType,
        started - info.currentAttemptScheduledTimestampMs,
        Date.now() - started,
      );
    }
  }
}
