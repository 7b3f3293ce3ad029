// elfInterpreter, which the busybox image builder uses to tell Debian's dynamic busybox (copied
// with its libraries) from busybox-static (copied alone) without running `ldd`. The ELF files
// here are built byte by byte: only the header and the program headers matter.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { elfInterpreter } from '../../support/elf';

const PT_LOAD = 1;
const PT_DYNAMIC = 2;
const PT_INTERP = 3;

interface Segment {
  type: number;
  data?: Buffer;
}

/** An ELF file with these program headers; each segment's data follows the header table. */
function elf({ is64 = true, le = true, segments }: { is64?: boolean; le?: boolean; segments: Segment[] }): Buffer {
  const ehsize = is64 ? 64 : 52;
  const phentsize = is64 ? 56 : 32;
  let dataAt = ehsize + phentsize * segments.length;
  const out = Buffer.alloc(dataAt + segments.reduce((n, s) => n + (s.data?.length ?? 0), 0));
  const u16 = (v: number, at: number) => (le ? out.writeUInt16LE(v, at) : out.writeUInt16BE(v, at));
  const u32 = (v: number, at: number) => (le ? out.writeUInt32LE(v, at) : out.writeUInt32BE(v, at));
  const word = (v: number, at: number) =>
    is64 ? (le ? out.writeBigUInt64LE(BigInt(v), at) : out.writeBigUInt64BE(BigInt(v), at)) : u32(v, at);
  out.write('\x7fELF', 0, 'latin1');
  out[4] = is64 ? 2 : 1;
  out[5] = le ? 1 : 2;
  out[6] = 1;
  u16(2, 16); // ET_EXEC
  word(ehsize, is64 ? 32 : 28);
  u16(ehsize, is64 ? 52 : 40);
  u16(phentsize, is64 ? 54 : 42);
  u16(segments.length, is64 ? 56 : 44);
  segments.forEach((s, i) => {
    const ph = ehsize + i * phentsize;
    const size = s.data?.length ?? 0;
    u32(s.type, ph);
    word(dataAt, ph + (is64 ? 8 : 4));
    word(size, ph + (is64 ? 32 : 16));
    s.data?.copy(out, dataAt);
    dataAt += size;
  });
  return out;
}

const interp = (name: string): Segment => ({ type: PT_INTERP, data: Buffer.from(`${name}\0`) });

describe('elfInterpreter', () => {
  it('names the loader of a 64-bit little-endian dynamic executable', () => {
    const file = elf({ segments: [{ type: 6 }, interp('/lib64/ld-linux-x86-64.so.2'), { type: PT_LOAD }, { type: PT_DYNAMIC }] });
    assert.equal(elfInterpreter(file), '/lib64/ld-linux-x86-64.so.2');
  });

  it('names the loader of a 32-bit big-endian one', () => {
    assert.equal(elfInterpreter(elf({ is64: false, le: false, segments: [{ type: PT_LOAD }, interp('/lib/ld.so.1')] })), '/lib/ld.so.1');
  });

  it('is null for a static executable, and for a static-pie one, which has a dynamic section but no loader', () => {
    assert.equal(elfInterpreter(elf({ segments: [{ type: PT_LOAD }, { type: PT_LOAD }] })), null);
    assert.equal(elfInterpreter(elf({ segments: [{ type: PT_LOAD }, { type: PT_DYNAMIC }] })), null);
    assert.equal(elfInterpreter(elf({ is64: false, segments: [{ type: PT_LOAD }] })), null);
    assert.equal(elfInterpreter(elf({ segments: [] })), null);
  });

  it('reads a loader name that has no terminating NUL', () => {
    assert.equal(elfInterpreter(elf({ segments: [{ type: PT_INTERP, data: Buffer.from('/lib/ld-musl-x86_64.so.1') }] })), '/lib/ld-musl-x86_64.so.1');
  });

  it('refuses what is not ELF, or is cut short', () => {
    assert.throws(() => elfInterpreter(Buffer.from('#!/bin/sh\necho hi\n')), /not an ELF file/);
    assert.throws(() => elfInterpreter(Buffer.alloc(0)), /not an ELF file/);
    const good = elf({ segments: [{ type: PT_LOAD }, interp('/lib64/ld-linux-x86-64.so.2')] });
    assert.throws(() => elfInterpreter(good.subarray(0, 40)), /truncated ELF file \(header\)/);
    assert.throws(() => elfInterpreter(good.subarray(0, 64 + 56 + 10)), /truncated ELF file \(program headers\)/);
    assert.throws(() => elfInterpreter(good.subarray(0, good.length - 5)), /truncated ELF file \(interpreter name\)/);
    const badClass = Buffer.from(good);
    badClass[4] = 7;
    assert.throws(() => elfInterpreter(badClass), /unknown ELF class 7/);
    const badOrder = Buffer.from(good);
    badOrder[5] = 0;
    assert.throws(() => elfInterpreter(badOrder), /unknown ELF byte order 0/);
  });
});
