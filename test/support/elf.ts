// Just enough ELF reading to tell a dynamically linked program from a static one without asking
// `ldd`, whose answer for a static binary is an error ("not a dynamic executable") in wording
// that varies with the libc and its version. A program needs shared libraries exactly when it
// names a program interpreter (PT_INTERP, the dynamic loader); a static-pie binary has a dynamic
// section but no interpreter, and needs nothing either.

const PT_INTERP = 3;

/**
 * The program interpreter an ELF executable names (e.g. /lib64/ld-linux-x86-64.so.2), or null
 * for a static one. `image` must hold the ELF header, the program headers and the interpreter
 * name, which sit at the front of any real executable. Throws for anything that is not ELF.
 */
export function elfInterpreter(image: Buffer): string | null {
  if (image.length < 16 || image.readUInt32BE(0) !== 0x7f454c46) throw new Error('not an ELF file');
  const is64 = image[4] === 2;
  if (image[4] !== 1 && !is64) throw new Error(`unknown ELF class ${image[4]}`);
  if (image[5] !== 1 && image[5] !== 2) throw new Error(`unknown ELF byte order ${image[5]}`);
  const le = image[5] === 1;
  const need = (end: number, what: string): void => {
    if (end > image.length) throw new Error(`truncated ELF file (${what})`);
  };
  const u16 = (at: number): number => (le ? image.readUInt16LE(at) : image.readUInt16BE(at));
  const u32 = (at: number): number => (le ? image.readUInt32LE(at) : image.readUInt32BE(at));
  // 64-bit offsets as plain numbers: one past 2^53 cannot point inside a buffer we hold anyway.
  const word = (at: number): number => (is64 ? Number(le ? image.readBigUInt64LE(at) : image.readBigUInt64BE(at)) : u32(at));

  need(is64 ? 64 : 52, 'header');
  const phoff = word(is64 ? 32 : 28);
  const phentsize = u16(is64 ? 54 : 42);
  const phnum = u16(is64 ? 56 : 44);
  if (phnum > 0 && phentsize < (is64 ? 56 : 32)) throw new Error(`program header entries of ${phentsize} bytes`);
  for (let i = 0; i < phnum; i++) {
    const ph = phoff + i * phentsize;
    need(ph + phentsize, 'program headers');
    if (u32(ph) !== PT_INTERP) continue;
    const offset = word(ph + (is64 ? 8 : 4));
    const size = word(ph + (is64 ? 32 : 16));
    need(offset + size, 'interpreter name');
    const name = image.subarray(offset, offset + size);
    const nul = name.indexOf(0);
    return name.subarray(0, nul < 0 ? name.length : nul).toString('utf8');
  }
  return null;
}
