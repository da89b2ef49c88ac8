import path from 'node:path';
import * as proto from '@temporalio/proto';
import { patchProtobufRoot } from '@temporalio/proto/lib/patch-protobuf-root';

/**
 * Workflow histories to and from the proto3 JSON that Temporal's tools write (the Web UI's and
 * the CLI's "download JSON"), for the committed replay histories.
 *
 * The SDK's own `historyToJSON` / `historyFromJSON` (and `Worker.runReplayHistories` given JSON)
 * do the same, but fail with "type must be a Type" whenever npm installs separate copies of
 * protobufjs under @temporalio/common and @temporalio/proto, as it does here (gRPC's loader puts
 * protobufjs 7 at the top level): the JSON codec of one copy does not accept the message types
 * of the other. So we use the codec of the copy @temporalio/proto itself loads.
 */

type History = proto.temporal.api.history.v1.IHistory;

/** One committed history, as listed in `<set>/manifest.json` (dev/record-histories writes it). */
export interface ManifestEntry {
  file: string;
  scenario: string;
  workflowType: string;
  workflowId: string;
  runId: string;
}

interface ProtoJson {
  toJson(type: unknown, message: unknown): unknown;
  fromJson(type: unknown, json: unknown, options?: { ignoreUnknownFields?: boolean }): unknown;
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
const protoJson = require(
  require.resolve('protobufjs/ext/protojson', {
    paths: [path.dirname(require.resolve('@temporalio/proto'))],
  }),
) as ProtoJson;
const historyType = (
  patchProtobufRoot(proto) as unknown as { lookupType(name: string): unknown }
).lookupType('temporal.api.history.v1.History');

/** A fetched history as pretty-printed proto3 JSON. */
export function historyToJson(history: History): string {
  const message = proto.temporal.api.history.v1.History.fromObject(history);
  return JSON.stringify(protoJson.toJson(historyType, message), null, 2);
}

/**
 * Proto3 JSON back into a history the replayer accepts. Fields a newer server added are ignored
 * rather than rejected, as the SDK does.
 */
export function historyFromJson(json: unknown): History {
  const events = (json as { events?: unknown } | null)?.events;
  if (!Array.isArray(events) || events.length === 0) {
    throw new TypeError(
      'not a workflow history: expected an object with a non-empty "events" array',
    );
  }
  return protoJson.fromJson(historyType, json, { ignoreUnknownFields: true }) as History;
}
