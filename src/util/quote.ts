// Quoting what a caller sent inside an error message. A hostile or broken client can send
// megabytes in one field; echoing it back makes a status trailer bigger than many clients
// accept (grpc-js waits for its deadline instead). So only a short, escaped prefix is quoted,
// with the total length when it was cut.

/** How many characters of a caller's value an error message may quote. */
const QUOTE_LIMIT = 128;

export function quote(value: string, limit: number = QUOTE_LIMIT): string {
  if (value.length <= limit) return JSON.stringify(value);
  return `${JSON.stringify(value.slice(0, limit))}… (${value.length} characters)`;
}
