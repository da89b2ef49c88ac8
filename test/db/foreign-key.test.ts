import { MISSING_REFERENCE, unlessMissingReference } from '../../src/db/repositories/foreign-key';

// How a write that names a missing row (an order) is told from every other failure; the real
// refusals of both dialects are met in payments.test.ts and unmatched.test.ts.
describe('unlessMissingReference', () => {
  it('hands back what the write returned, whatever it is', async () => {
    expect(await unlessMissingReference(() => Promise.resolve(42))).toBe(42);
    expect(await unlessMissingReference(() => Promise.resolve(undefined))).toBeUndefined();
  });

  it.each([
    ['PostgreSQL', '23503'],
    ['SQLite', 'SQLITE_CONSTRAINT_FOREIGNKEY'],
  ])("answers MISSING_REFERENCE for %s's foreign-key violation", async (_dialect, code) => {
    const refused = Object.assign(new Error('foreign key'), { code });
    expect(await unlessMissingReference(() => Promise.reject(refused))).toBe(MISSING_REFERENCE);
  });

  it.each([
    ['another constraint', Object.assign(new Error('unique'), { code: '23505' })],
    ["SQLite's plain constraint code", { code: 'SQLITE_CONSTRAINT' }],
    ['an error with no code', new Error('connection lost')],
    ['a thrown string that looks like the code', '23503'],
    ['a thrown null', null],
  ])('lets %s through', async (_what, error) => {
    // Not always an Error on purpose: a driver or a caller's code may throw anything.
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
    await expect(unlessMissingReference(() => Promise.reject(error))).rejects.toBe(error);
  });
});
