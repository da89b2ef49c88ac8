import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

/**
 * Readers only ever see a whole file: a temporary file in the same directory, flushed, renamed
 * over the target, then the directory flushed (until then a power cut can undo the rename). A
 * dead attempt leaves at most a stray `.tmp`; its retry writes the same path and content.
 */

export async function writeFileAtomically(file: string, data: string | Uint8Array): Promise<void> {
  await writeAtomically(file, async (handle) => {
    await handle.writeFile(data);
  });
}

/** Like `writeFileAtomically`, for content written piece by piece (large files). */
export async function writeAtomically(
  file: string,
  write: (handle: FileHandle) => Promise<void>,
): Promise<void> {
  const dir = path.dirname(file);
  const firstCreated = await mkdir(dir, { recursive: true });
  // Unique per attempt: two attempts that overlap (a timed-out one still running) never share one.
  const temp = path.join(dir, `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const handle = await open(temp, 'w');
    try {
      await write(handle);
      // Without this, a power cut after the rename can leave the new name on empty blocks.
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  await syncDirectory(dir);
  // Each directory mkdir created is an entry in its parent, flushed with the parent.
  if (firstCreated !== undefined) {
    for (
      let created = dir;
      created !== path.dirname(firstCreated);
      created = path.dirname(created)
    ) {
      await syncDirectory(path.dirname(created));
    }
  }

  // Inside the effect it belongs to, so the crash-point scan (test/activities) sees it as part of it.
  async function syncDirectory(name: string): Promise<void> {
    const handle = await open(name, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }
}

export function isTemporaryFile(name: string): boolean {
  return name.startsWith('.') && name.endsWith('.tmp');
}
