/**
 * The gRPC status in an error or its first four causes (the client wraps it), with what the
 * server said: its details, or the message when it sent none.
 */
export function grpcStatus(error: unknown): { code: number; details: string } | undefined {
  for (let e = error, depth = 0; e && depth < 5; depth += 1) {
    const { code, details, message } = e as {
      code?: unknown;
      details?: unknown;
      message?: unknown;
    };
    if (typeof code === 'number') {
      return { code, details: typeof details === 'string' && details ? details : String(message) };
    }
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

export function grpcCode(error: unknown): number | undefined {
  return grpcStatus(error)?.code;
}
