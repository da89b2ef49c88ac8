import { Writable } from 'node:stream';
import pino from 'pino';

/**
 * Every line the app logs, at the most verbose level, through a plain pino logger without the
 * project's redaction: tests read what was really written, not what a mask left of it.
 */
export function capturingLogger() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, logger: pino({ level: 'trace' }, sink) };
}
