/**
 * Node joins most repeated headers with ", " (which a value may contain) and keeps only the first
 * of some; `rawHeaders` keeps each line, so a header that must come once is counted here.
 */
export function headerLines(rawHeaders: readonly string[], name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.toLowerCase() === name) values.push(rawHeaders[i + 1]!);
  }
  return values;
}
