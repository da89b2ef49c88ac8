import { z } from 'zod';
import { formatIssues } from '../../src/http/validation';

const errorOf = (schema: z.ZodType, value: unknown) => {
  const result = schema.safeParse(value);
  if (result.success) throw new Error('expected a validation error');
  return result.error;
};

describe('formatIssues', () => {
  it('names each field once, with its first problem, when several checks fail on it', () => {
    const schema = z.object({
      // Two checks that both fail for one value: .int() keeps to safe integers, and so does max.
      order_id: z.number().int().max(Number.MAX_SAFE_INTEGER),
      code: z
        .string()
        .min(5)
        .regex(/^[a-z]+$/),
    });
    expect(formatIssues(errorOf(schema, { order_id: 2 ** 60, code: 'A1' }))).toBe(
      'order_id: Too big: expected int to be <=9007199254740991; ' +
        'code: Too small: expected string to have >=5 characters',
    );
  });

  it('keeps the problems of different fields, nested paths and the value itself apart', () => {
    expect(formatIssues(errorOf(z.object({ a: z.object({ b: z.string() }) }), { a: {} }))).toBe(
      'a.b: Invalid input: expected string, received undefined',
    );
    expect(formatIssues(errorOf(z.string().min(2).max(0), 'abc'))).toBe(
      'Too big: expected string to have <=0 characters',
    );
  });

  it('lists at most five fields, counting each field once', () => {
    const field = z.number().int().max(Number.MAX_SAFE_INTEGER);
    const schema = z.object({ a: field, b: field, c: field, d: field, e: field, f: field });
    const huge = 2 ** 60;
    const message = formatIssues(
      errorOf(schema, { a: huge, b: huge, c: huge, d: huge, e: huge, f: huge }),
    );
    expect(message.split('; ').map((part) => part.split(':')[0])).toEqual([
      'a',
      'b',
      'c',
      'd',
      'e',
    ]);
  });
});
