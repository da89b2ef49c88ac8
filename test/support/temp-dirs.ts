import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/**
 * Fresh folders under the system's temporary one for the tests of this file (or describe
 * block): each call of the returned function makes one, and all are removed after the tests
 * (an afterAll hook, registered where this is called).
 */
export function tempDirsForTests(prefix: string): () => Promise<string> {
  const made: string[] = [];
  afterAll(async () => {
    await Promise.all(made.map((dir) => rm(dir, { recursive: true, force: true })));
  });
  return async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
    made.push(dir);
    return dir;
  };
}
