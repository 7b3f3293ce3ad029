// SPDY/3 framing: frame layout, name/value blocks, and the dictionary-primed zlib streams.
import assert from 'node:assert/strict';
import * as zlib from 'node:zlib';
import { describe, it } from 'node:test';
import spdyDictionaries from 'spdy-transport/lib/spdy-transport/protocol/spdy/dictionary';
import {
  ControlType,
  decodeFrames,
  decodeHeaderBlock,
  encodeControl,
  encodeData,
  encodeHeaderBlock,
  FLAG_FIN,
  FrameError,
  FrameReader,
  HeaderBlockError,
  HeaderCodec,
  MAX_HEADER_BLOCK_BYTES,
  MAX_CONTROL_FRAME_PAYLOAD,
  MAX_HEADER_ENTRIES,
  MAX_HEADER_VALUES,
  parseSettings,
  parseSynStream,
  parseWindowUpdate,
  SETTINGS_INITIAL_WINDOW_SIZE,
  windowUpdatePayload,
} from '../../../../src/streaming/spdy/framing';

describe('SPDY/3 framing', () => {
  it('encodes control and data frames as the spec lays them out', () => {
    const ping = encodeControl(ControlType.Ping, 0, Buffer.from([0, 0, 0, 7]));
    assert.deepEqual([...ping], [0x80, 0x03, 0x00, 0x06, 0x00, 0x00, 0x00, 0x04, 0, 0, 0, 7]);
    const data = encodeData(5, FLAG_FIN, Buffer.from('ab'));
    assert.deepEqual([...data], [0, 0, 0, 5, 0x01, 0, 0, 2, 0x61, 0x62]);
  });

  it('decodes whole frames and keeps a partial one for later', () => {
    const bytes = Buffer.concat([encodeData(1, 0, Buffer.from('xyz')), encodeControl(ControlType.Ping, 0, Buffer.from([0, 0, 0, 1]))]);
    const { frames, rest } = decodeFrames(bytes.subarray(0, bytes.length - 2));
    assert.deepEqual(frames, [{ kind: 'data', streamId: 1, flags: 0, data: Buffer.from('xyz') }]);
    assert.equal(rest.length, 10);
    const more = decodeFrames(Buffer.concat([rest, bytes.subarray(bytes.length - 2)]));
    assert.equal(more.frames.length, 1);
    assert.deepEqual(more.frames[0], { kind: 'control', type: ControlType.Ping, flags: 0, payload: Buffer.from([0, 0, 0, 1]) });
    assert.throws(() => decodeFrames(Buffer.from([0x80, 0x02, 0, 6, 0, 0, 0, 0])), /SPDY version 2/);
  });

  it('round-trips name/value blocks, lower-casing names and keeping repeated values', () => {
    const block = encodeHeaderBlock({ streamType: ['error'], 'x-multi': ['a', 'b'] });
    assert.deepEqual(decodeHeaderBlock(block), { streamtype: ['error'], 'x-multi': ['a', 'b'] });
    assert.throws(() => decodeHeaderBlock(block.subarray(0, block.length - 1)), /truncated/);
  });

  it('refuses a block declaring more entries than its bound, before reading them', () => {
    const bomb = Buffer.alloc(4 + 10 * 8);
    bomb.writeUInt32BE(40_000, 0);
    assert.throws(() => decodeHeaderBlock(bomb), (err: Error) => err instanceof HeaderBlockError && /40000 entries \(at most 128\)/.test(err.message));
    assert.throws(() => decodeHeaderBlock(Buffer.alloc(MAX_HEADER_BLOCK_BYTES + 1)), HeaderBlockError);
  });

  it('keeps every value of a name repeated up to the bound', () => {
    const names: Record<string, string[]> = {};
    const block = encodeHeaderBlock(Object.fromEntries(Array.from({ length: MAX_HEADER_ENTRIES }, (_, i) => [`x-${i}`, [String(i)]])));
    Object.assign(names, decodeHeaderBlock(block));
    assert.equal(Object.keys(names).length, MAX_HEADER_ENTRIES);
  });

  it('keeps values split on NUL up to their bound, all names together', () => {
    const values = Array.from({ length: MAX_HEADER_VALUES / 2 }, (_, i) => String(i));
    const block = encodeHeaderBlock({ a: values, b: [...values.slice(0, -1), 'é\u00e9'] });
    assert.deepEqual(decodeHeaderBlock(block), { a: values, b: [...values.slice(0, -1), 'éé'] });
    assert.deepEqual(decodeHeaderBlock(encodeHeaderBlock({ x: ['', 'y', ''] })), { x: ['', 'y', ''] });
    const over = encodeHeaderBlock({ a: values, b: [...values, 'one more'] });
    assert.throws(() => decodeHeaderBlock(over), (err: Error) => err instanceof HeaderBlockError && /over 256 values/.test(err.message));
  });

  it('refuses cheaply a block whose one value is 65,520 NULs, which a hundred compressed bytes carry', async () => {
    const block = encodeHeaderBlock({ junk: ['\0'.repeat(MAX_HEADER_BLOCK_BYTES - 16)] });
    assert.equal(block.length, MAX_HEADER_BLOCK_BYTES);
    const sender = new HeaderCodec();
    const receiver = new HeaderCodec();
    const compressed = await sender.deflate({ junk: ['\0'.repeat(MAX_HEADER_BLOCK_BYTES - 16)] });
    assert.ok(compressed.length < 200, `${compressed.length} bytes compressed`);
    await assert.rejects(receiver.inflate(compressed), (err: Error) => err instanceof HeaderBlockError && /over 256 values/.test(err.message));
    // Before the bound, decoding it made 65,521 strings (some 2 ms a block) and went on; now the
    // count stops it at the 257th value (a count, not a time: timings are the bench's).
    assert.throws(() => decodeHeaderBlock(block), (err: Error) => err instanceof HeaderBlockError && /over 256 values/.test(err.message));
    sender.close();
    receiver.close();
  });

  it('stops inflating a block past its bound, and the codec refuses it', async () => {
    const sender = zlib.createDeflate({ dictionary: spdyDictionaries[3] });
    const huge = Buffer.alloc(4 + 8 + 8 * 1024 * 1024);
    huge.writeUInt32BE(1, 0);
    huge.writeUInt32BE(1, 4);
    huge.write('a', 8);
    huge.writeUInt32BE(8 * 1024 * 1024, 9);
    const compressed = await new Promise<Buffer>((resolve) => {
      const out: Buffer[] = [];
      sender.on('data', (c: Buffer) => out.push(c));
      sender.write(huge);
      sender.flush(zlib.constants.Z_SYNC_FLUSH, () => resolve(Buffer.concat(out)));
    });
    sender.close();
    const receiver = new HeaderCodec();
    await assert.rejects(receiver.inflate(compressed), (err: Error) => err instanceof HeaderBlockError && /inflates past 65536 bytes/.test(err.message));
    receiver.close();
  });

  it('compresses header blocks with the SPDY dictionary, one zlib stream per direction', async () => {
    const sender = new HeaderCodec();
    const receiver = new HeaderCodec();
    const first = await sender.deflate({ streamtype: ['stdin'] });
    const second = await sender.deflate({ streamtype: ['stdout'], port: ['80'] });
    // The first block is a standalone zlib stream start that names the dictionary.
    assert.deepEqual(decodeHeaderBlock(zlib.inflateSync(first, { dictionary: spdyDictionaries[3], finishFlush: zlib.constants.Z_SYNC_FLUSH })), { streamtype: ['stdin'] });
    assert.deepEqual(await receiver.inflate(first), { streamtype: ['stdin'] });
    assert.deepEqual(await receiver.inflate(second), { streamtype: ['stdout'], port: ['80'] });
    sender.close();
    receiver.close();
  });

  it('reads the stream ID and header block of SYN_STREAM', () => {
    const payload = Buffer.concat([Buffer.from([0, 0, 0, 3, 0, 0, 0, 0, 0, 0]), Buffer.from('hdr')]);
    assert.deepEqual(parseSynStream(payload), { streamId: 3, compressedHeaders: Buffer.from('hdr') });
    assert.throws(() => parseSynStream(Buffer.alloc(4)), /too short/);
  });

  it('reads frames as bytes come, handing on a data frame in pieces and never holding it whole', () => {
    const reader = new FrameReader();
    const big = encodeData(3, FLAG_FIN, Buffer.alloc(100_000, 0x61));
    const ping = encodeControl(ControlType.Ping, 0, Buffer.from([0, 0, 0, 1]));
    const bytes = Buffer.concat([big, ping, encodeData(5, FLAG_FIN, Buffer.alloc(0))]);
    const events = [];
    // In uneven pieces, splitting headers too.
    for (let off = 0; off < bytes.length; off += 7_001) events.push(...reader.push(bytes.subarray(off, off + 7_001)));
    const data = events.filter((e) => e.kind === 'data' && e.streamId === 3);
    assert.ok(data.length > 10, 'the data frame comes in pieces');
    assert.ok(data.every((e) => e.kind === 'data' && e.data.length <= 7_001));
    assert.equal(data.reduce((n, e) => n + (e.kind === 'data' ? e.data.length : 0), 0), 100_000);
    assert.deepEqual(data.map((e) => e.kind === 'data' && e.fin), [...Array(data.length - 1).fill(false), true]);
    const rest = events.filter((e) => !(e.kind === 'data' && e.streamId === 3));
    assert.deepEqual(rest.map((e) => (e.kind === 'control' ? [e.type, [...e.payload]] : [e.streamId, e.data.length, e.fin])), [
      [ControlType.Ping, [0, 0, 0, 1]],
      [5, 0, true],
    ]);
  });

  it('keeps nothing of a chunk but what it hands on as data: a chunk read into again after the call loses no header or control frame', () => {
    const reader = new FrameReader();
    const payload = Buffer.from(Array.from({ length: 300 }, (_, i) => i & 0xff));
    const bytes = Buffer.concat([encodeControl(ControlType.Headers, 0, payload), encodeData(7, FLAG_FIN, Buffer.from('xyz'))]);
    // One reused buffer, as the session's lent reads are: each piece overwrites the one before.
    const buffer = Buffer.alloc(64);
    const events = [];
    for (let off = 0; off < bytes.length; off += 61) {
      const n = bytes.copy(buffer, 0, off, off + 61);
      const got = reader.push(buffer.subarray(0, n));
      // Data is the caller's to copy before the next read (the session waits until it is sent).
      events.push(...got.map((e) => (e.kind === 'data' ? { ...e, data: Buffer.from(e.data) } : e)));
      buffer.fill(0xee);
    }
    assert.deepEqual(events.map((e) => (e.kind === 'control' ? [e.type, [...e.payload]] : [e.streamId, e.data.toString(), e.fin])), [
      [ControlType.Headers, [...payload]],
      [7, 'xyz', true],
    ]);
  });

  it('refuses a control frame over its bound from its header alone, and other SPDY versions', () => {
    const head = encodeControl(ControlType.SynStream, 0, Buffer.alloc(0));
    head.writeUIntBE(MAX_CONTROL_FRAME_PAYLOAD + 1, 5, 3);
    assert.throws(() => new FrameReader().push(head), FrameError);
    const ok = encodeControl(ControlType.Headers, 0, Buffer.alloc(MAX_CONTROL_FRAME_PAYLOAD));
    assert.equal(new FrameReader().push(ok).length, 1);
    const v2 = encodeControl(ControlType.Ping, 0, Buffer.alloc(4));
    v2.writeUInt16BE(0x8002, 0);
    assert.throws(() => new FrameReader().push(v2), /version 2/);
  });

  it('reads SETTINGS entries and WINDOW_UPDATE', () => {
    const settings = Buffer.alloc(4 + 16);
    settings.writeUInt32BE(2, 0);
    settings.writeUInt32BE(0x01000004, 4); // flags 1, ID 4
    settings.writeUInt32BE(100, 8);
    settings.writeUInt32BE(SETTINGS_INITIAL_WINDOW_SIZE, 12);
    settings.writeUInt32BE(1 << 20, 16);
    assert.deepEqual([...parseSettings(settings)], [
      [4, 100],
      [SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20],
    ]);
    assert.deepEqual(parseWindowUpdate(windowUpdatePayload(7, 65_536)), { streamId: 7, delta: 65_536 });
  });
});
