import type { Client } from '@temporalio/client';

/** What a stand-in client's calls do: a start resolves unless told otherwise; describe must be. */
export interface StandInBehaviour {
  start?: () => Promise<unknown>;
  describe?: () => Promise<unknown>;
}

/**
 * A Temporal client for the starters' unit tests, for what a real server rarely does on cue (a
 * run gone by the time a duplicate asks for it, a describe that fails). It records each start's
 * type and options, the deadline it ran under, and each describe.
 */
export function standInClient(behaviour: StandInBehaviour = {}) {
  const calls = {
    starts: [] as [string, Record<string, unknown>][],
    deadlines: [] as number[],
    describe: [] as string[],
  };
  const client = {
    connection: {
      withDeadline: (deadline: number, fn: () => Promise<unknown>) => {
        calls.deadlines.push(deadline);
        return fn();
      },
    },
    workflow: {
      start: (type: string, options: Record<string, unknown>) => {
        calls.starts.push([type, options]);
        return behaviour.start ? behaviour.start() : Promise.resolve({});
      },
      getHandle: (id: string) => ({
        describe: () => {
          calls.describe.push(id);
          return behaviour.describe
            ? behaviour.describe()
            : Promise.reject(new Error('describe was not expected'));
        },
      }),
    },
  } as unknown as Client;
  return { client, calls };
}
