// The WebSocket masking `ws` asks of the optional native module `bufferutil`, which the
// bundle (scripts/bundle.mjs) resolves to this file: every message a client sends is masked,
// and `ws`'s own fallback unmasks it a byte at a time, which cost the shim more CPU than the
// rest of a WebSocket stdin together. Here the bulk goes a 32-bit word at a time.

/** The 4 mask bytes, starting at mask byte `from`, as one word in the machine's byte order. */
function maskWord(mask: Buffer, from: number): number {
  return new Uint32Array(Uint8Array.of(mask[from & 3]!, mask[(from + 1) & 3]!, mask[(from + 2) & 3]!, mask[(from + 3) & 3]!).buffer)[0]!;
}

/** XORs `buffer` in place with the 4-byte `mask` repeated (RFC 6455 section 5.3). */
export function unmask(buffer: Buffer, mask: Buffer): void {
  const length = buffer.length;
  // Byte by byte up to the first 4-byte boundary of the underlying memory, words after it.
  const lead = Math.min(length, (4 - (buffer.byteOffset & 3)) & 3);
  let i = 0;
  for (; i < lead; i++) buffer[i]! ^= mask[i & 3]!;
  const words = (length - i) >>> 2;
  if (words > 0) {
    const view = new Uint32Array(buffer.buffer, buffer.byteOffset + i, words);
    const word = maskWord(mask, i);
    for (let w = 0; w < words; w++) view[w]! ^= word;
    i += words * 4;
  }
  for (; i < length; i++) buffer[i]! ^= mask[i & 3]!;
}

/** Writes `length` bytes of `source` XOR `mask` to `output` at `offset` (a client's sending; the shim sends unmasked). */
export function mask(source: Buffer, maskBytes: Buffer, output: Buffer, offset: number, length: number): void {
  for (let i = 0; i < length; i++) output[offset + i] = source[i]! ^ maskBytes[i & 3]!;
}
