import { Writable } from 'node:stream';
import pino from 'pino';
import { LOG_REDACTION } from '../src/logger';
import { maskEmail } from '../src/shared/pii';

// The logger's own redaction rules: what a careless log call would otherwise write.
function logged(fields: object): Record<string, unknown> {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  pino({ redact: LOG_REDACTION }, sink).info(fields, 'line');
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

it('masks a customer e-mail wherever a log call puts it, keeping a hint', () => {
  const line = logged({
    customerEmail: 'jane.doe@example.com',
    order: { id: 7, customer_email: 'jane.doe@example.com' },
    user: { email: 'x@shop.example' },
  });
  expect(line.customerEmail).toBe('j***@example.com');
  expect(line.order).toEqual({ id: 7, customer_email: 'j***@example.com' });
  expect(line.user).toEqual({ email: 'x***@shop.example' });
  expect(JSON.stringify(line)).not.toContain('jane.doe');
});

it('redacts credentials and bodies outright', () => {
  const line = logged({
    req: { headers: { authorization: 'Bearer 0123456789abcdef0123456789abcdef' } },
    headers: { authorization: 'Bearer 0123456789abcdef0123456789abcdef' },
    body: { customer_email: 'jane.doe@example.com' },
  });
  expect(JSON.stringify(line)).not.toContain('0123456789abcdef');
  expect(line.body).toBe('[redacted]');
});

it.each([
  ['jane.doe@example.com', 'j***@example.com'],
  ['a@b.c', 'a***@b.c'],
  ['"odd@name"@example.com', '"***@example.com'],
  ['not an address', '***'],
  ['@example.com', '***'],
  ['jane@', '***'],
  [undefined, '***'],
])('masks %p as %p', (value, masked) => {
  expect(maskEmail(value)).toBe(masked);
});
