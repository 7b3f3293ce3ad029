// The Stream* RPCs send the same list their List* twin answers, cut into messages of at most
// `size` items, so that no message nears gRPC's 16 MiB limit however many items there are.
export function sendInBatches<T>(items: readonly T[], size: number, send: (batch: T[]) => void): void {
  for (let i = 0; i < items.length; i += size) send(items.slice(i, i + size));
}
