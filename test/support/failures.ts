/**
 * What `promise` rejects with, asserted to be a `type` (an `ApplicationFailure`, a mailer's
 * error…): for tests that go on to check its fields. A promise that resolves fails the test.
 */
export async function rejectionOf<T>(
  promise: Promise<unknown>,
  type: abstract new (...args: never[]) => T,
): Promise<T> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(type);
  return error as T;
}

/** What `run` throws, asserted to be a `type`; a `run` that returns fails the test. */
export function thrownBy<T>(run: () => unknown, type: abstract new (...args: never[]) => T): T {
  let error: unknown;
  try {
    run();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(type);
  return error as T;
}
