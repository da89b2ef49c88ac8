import type * as FsPromises from 'node:fs/promises';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { writeFileAtomically } from '../../src/activities/atomic-file';

// The module object itself (an `import *` would be a copy), so the spies reach atomic-file's calls.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const fsPromises = require('node:fs/promises') as typeof FsPromises;

// A power cut cannot be staged in a test; what can be checked is that every fsync a durable
// rename needs is made, in the order that makes it durable.
describe('writeFileAtomically', () => {
  let root: string;
  let steps: string[];
  beforeEach(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'atomic-file-'));
    steps = [];
    const open = fsPromises.open;
    jest.spyOn(fsPromises, 'open').mockImplementation(async (...args) => {
      const handle = await open(...args);
      const sync = handle.sync.bind(handle);
      const name = path.relative(root, String(args[0]));
      handle.sync = async () => {
        await sync();
        steps.push(`fsync ${name.endsWith('.tmp') ? '<temp>' : name || '.'}`);
      };
      return handle;
    });
    const rename = fsPromises.rename;
    jest.spyOn(fsPromises, 'rename').mockImplementation(async (from, to) => {
      await rename(from, to);
      steps.push(`rename to ${path.relative(root, String(to))}`);
    });
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await rm(root, { recursive: true, force: true });
  });

  it('flushes the file, renames it, then flushes its directory', async () => {
    await writeFileAtomically(path.join(root, 'order-1.pdf'), 'pdf');

    expect(steps).toEqual(['fsync <temp>', 'rename to order-1.pdf', 'fsync .']);
    expect(await readFile(path.join(root, 'order-1.pdf'), 'utf8')).toBe('pdf');
    expect(await readdir(root)).toEqual(['order-1.pdf']);
  });

  it('also flushes the parent of every directory it had to create', async () => {
    await writeFileAtomically(path.join(root, 'exports/q3/orders.csv'), 'id\r\n');

    expect(steps).toEqual([
      'fsync <temp>',
      'rename to exports/q3/orders.csv',
      'fsync exports/q3',
      'fsync exports',
      'fsync .',
    ]);
  });
});
