/**
 * The value of every line of header `name` (lowercase; matched in any case), in order.
 * `request.headers` cannot tell two lines from one: Node joins most repeated headers with ", "
 * (a value may contain ", " itself) and keeps only the first of some. `rawHeaders` keeps each
 * line as received, so a header that must come once is counted here.
 */
export function headerLines(rawHeaders: readonly string[], name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.toLowerCase() === name) values.push(rawHeaders[i + 1]!);
  }
  return values;
}
