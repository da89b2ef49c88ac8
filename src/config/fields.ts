import { z } from 'zod';

// The generated reference (docs/configuration.md) reads each field's documentation from here,
// so a variable and its description change in one place.

export type NodeEnv = 'development' | 'test' | 'production';

/** What a slice's cross-field rules see: its own parsed fields and the mode. */
export type Checked<S extends z.ZodRawShape> = z.output<z.ZodObject<S>> & { NODE_ENV: NodeEnv };

/** The documentation of one variable: what it does and, when zod has no plain default, its default. */
export interface FieldDoc {
  description: string;
  defaultText?: string;
}

/** Attaches a variable's documentation; the last call on a field, so it sits on the outer schema. */
export function doc<T extends z.ZodType>(schema: T, description: string, defaultText?: string): T {
  return schema.meta(defaultText === undefined ? { description } : { description, defaultText });
}

export const port = (fallback: number) =>
  z.coerce.number().int().min(0).max(65535).default(fallback);

export const integer = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/** Unset and empty both mean "not configured" (an empty line in a .env file is common). */
export const blankToUndefined = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

export const optionalUrl = () => blankToUndefined.pipe(z.url().optional());

const HOST_PORT = /^[A-Za-z0-9.-]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$/;

/** A listening or dialled address: host:port, IPv6 hosts in brackets ([::]:9464). */
function hostPort(message: string) {
  return z.string().regex(HOST_PORT, message);
}

/**
 * An optional `host:port` (blank is unset), `example` in the refusal; `orOff`: or the word `off`,
 * for a listener that can be turned off.
 */
export function optionalHostPort(example: string, { orOff = false } = {}) {
  const address = orOff
    ? z.union([z.literal('off'), hostPort(`must be host:port (e.g. ${example}) or off`)])
    : hostPort(`must be host:port, e.g. ${example}`);
  return blankToUndefined.pipe(address.optional());
}

/** A signature scheme's tolerance window: how far its timestamp may be from our clock. */
export function toleranceSeconds(fallback: number) {
  return z.coerce
    .number()
    .int()
    .min(1)
    .max(3600, 'must be at most 3600: a wider window lets a leaked request be replayed for longer')
    .default(fallback);
}

/**
 * Each entry parsed here only, the text kept beside what it parsed to. A value listed twice is
 * refused (a rotation lists two different ones); messages name the position, never the value.
 */
export function secretList<T>(parse: (value: string) => T) {
  return blankToUndefined.transform((v, ctx) => {
    if (v === undefined) return undefined;
    const texts = v
      .split(',')
      .map((e) => e.trim())
      .filter((e) => e.length > 0);
    return texts.map((text, index) => {
      let parsed: T | undefined;
      let problem: string | undefined;
      try {
        parsed = parse(text);
      } catch (error) {
        problem = (error as Error).message;
      }
      problem ??= texts.indexOf(text) < index ? 'is listed twice' : undefined;
      if (problem !== undefined) {
        ctx.addIssue({ code: 'custom', message: `entry ${index + 1}: ${problem}` });
      }
      return { text, parsed };
    });
  });
}

export function texts(list: readonly { text: string }[] | undefined): string[] | undefined {
  return list?.map((e) => e.text);
}
