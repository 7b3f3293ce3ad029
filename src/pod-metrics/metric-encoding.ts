// ListPodSandboxMetrics' answer written straight into its protobuf encoding as the figures are
// read, one PodSandboxMetrics after another, instead of Metric objects that protobufjs then
// copies (fromObject) and encodes (one writer operation per field). At 1,000 containers that
// was ~30,000 Metric objects, each with its label array, made and copied for every call:
// most of its CPU and of the hundreds of MiB a burst of calls peaked at (issue 44). Pure.
//
// The wire format (proto/api.proto): ListPodSandboxMetricsResponse and
// StreamPodSandboxMetricsResponse both hold the pods as field 1, so a pod's bytes (tag, length
// and PodSandboxMetrics) make either answer, or one message of the stream. PodSandboxMetrics:
// pod_sandbox_id = 1, metrics = 2, container_metrics = 3; ContainerMetrics: container_id = 1,
// metrics = 2; Metric: name = 1, timestamp = 2 (0, so absent), metric_type = 3 (COUNTER, 0, is
// absent), label_values = 4, value = 5 (UInt64Value: value = 1, absent when 0). Fields go out in
// number order, as protobufjs writes them; a proto3 default is left out, which decodes the same.
import { MetricSink, type BaseLabels } from './metric-messages';
import type { MetricSpec } from './metric-table';

const WIRE_VARINT = 0;
const WIRE_LENGTH = 2;
const tag = (field: number, wire: number): number => (field << 3) | wire;

const POD_ENTRY = tag(1, WIRE_LENGTH);
const POD_SANDBOX_ID = tag(1, WIRE_LENGTH);
const POD_METRICS = tag(2, WIRE_LENGTH);
const CONTAINER_METRICS = tag(3, WIRE_LENGTH);
const CONTAINER_ID = tag(1, WIRE_LENGTH);
const CONTAINER_METRIC = tag(2, WIRE_LENGTH);
const METRIC_NAME = tag(1, WIRE_LENGTH);
const METRIC_TYPE = tag(3, WIRE_VARINT);
const LABEL_VALUE = tag(4, WIRE_LENGTH);
const METRIC_VALUE = tag(5, WIRE_LENGTH);
const UINT64_VALUE = tag(1, WIRE_VARINT);
/** MetricType.GAUGE; COUNTER is 0, the default. */
const GAUGE = 1;

/** Bytes reserved for a message's length before its size is known: 2 hold up to 16 KiB (a Metric, a container's metrics). */
const LENGTH_GUESS = 2;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

/** A growing buffer that protobuf fields are written into. */
class ProtoBytes {
  buf: Buffer;
  at = 0;

  constructor(capacity: number) {
    this.buf = Buffer.allocUnsafe(Math.max(16, capacity));
  }

  room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.at + n));
    this.buf.copy(grown, 0, 0, this.at);
    this.buf = grown;
  }

  /** A varint of up to 2^53 (a tag, a length, a figure as a number). */
  varint(n: number): void {
    this.room(8);
    while (n >= 0x80) {
      this.buf[this.at++] = (n % 128) | 0x80;
      n = Math.floor(n / 128);
    }
    this.buf[this.at++] = n;
  }

  /** A uint64's varint. */
  bigVarint(v: bigint): void {
    if (v <= MAX_SAFE) return this.varint(Number(v));
    this.room(10);
    while (v >= 0x80n) {
      this.buf[this.at++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.buf[this.at++] = Number(v);
  }

  string(field: number, s: string): void {
    const length = Buffer.byteLength(s);
    this.varint(field);
    this.varint(length);
    this.room(length);
    this.at += this.buf.write(s, this.at, 'utf8');
  }

  /** Copies bytes written earlier, [start, end), to the end (copyWithin: Buffer#copy's checks cost more than these few bytes). */
  again(start: number, end: number): void {
    this.room(end - start);
    this.buf.copyWithin(this.at, start, end);
    this.at += end - start;
  }

  /** Appends `b`: a few bytes as a rule (a metric's name, a label), copied a byte at a time, which costs less than a call to set() or copy(). */
  bytes(b: Uint8Array): void {
    const n = b.length;
    this.room(n);
    const buf = this.buf;
    let at = this.at;
    for (let i = 0; i < n; i++) buf[at++] = b[i]!;
    this.at = at;
  }

  /** Starts a length-delimited field; `end` with what this answers once its content is written. */
  begin(field: number): number {
    this.varint(field);
    this.room(LENGTH_GUESS);
    this.at += LENGTH_GUESS;
    return this.at;
  }

  /**
   * Writes the length of the field begun at `contentStart`, moving its content when the length
   * takes other than LENGTH_GUESS bytes; answers by how much the content moved.
   */
  end(contentStart: number): number {
    const length = this.at - contentStart;
    const size = varintSize(length);
    if (size !== LENGTH_GUESS) {
      this.room(size - LENGTH_GUESS);
      this.buf.copy(this.buf, contentStart + size - LENGTH_GUESS, contentStart, this.at);
      this.at += size - LENGTH_GUESS;
    }
    let at = contentStart - LENGTH_GUESS;
    let n = length;
    while (n >= 0x80) {
      this.buf[at++] = (n % 128) | 0x80;
      n = Math.floor(n / 128);
    }
    this.buf[at] = n;
    return size - LENGTH_GUESS;
  }
}

/** A metric's name and kind, the same bytes in every Metric of it. */
const specHeads = new WeakMap<MetricSpec, Buffer>();

function specHead(s: MetricSpec): Buffer {
  let head = specHeads.get(s);
  if (head === undefined) {
    const w = new ProtoBytes(64);
    w.string(METRIC_NAME, s.name);
    // COUNTER, the default, is left out.
    if (s.kind === 'GAUGE') {
      w.varint(METRIC_TYPE);
      w.varint(GAUGE);
    }
    head = w.buf.subarray(0, w.at);
    specHeads.set(s, head);
  }
  return head;
}

/** The encoded answer: every pod's entry (tag, length, PodSandboxMetrics) one after another, and each entry apart. */
export interface EncodedPodMetrics {
  /** A ListPodSandboxMetricsResponse (or StreamPodSandboxMetricsResponse) holding every pod. */
  bytes: Buffer;
  /** Each pod's entry: views of `bytes`, which any run of them concatenated make a message of. */
  pods: Buffer[];
}

/**
 * Writes the pods' metrics: `beginPod`, its network metrics (`metrics` with `beginMetrics`), then
 * each container (`beginContainer`, its metrics, `endContainer`), `endPod`; `finish` at the end.
 * Metrics are added as to any MetricSink, with the base labels last begun.
 */
export class PodMetricsWriter extends MetricSink {
  private readonly w: ProtoBytes;
  private readonly podEnds: number[] = [];
  private pod = -1;
  private container = -1;
  /** Extra label values (a device, an interface, "Read"...: few, each in many metrics) as encoded fields. */
  private readonly extraLabels = new Map<string, Buffer>();
  /** Where the base labels' bytes were first written for the metrics now being added. */
  private labels: BaseLabels | undefined;
  private labelBytes: [start: number, end: number] | undefined;

  /** `capacity`: the bytes expected (the last answer's size), so the buffer seldom grows. */
  constructor(capacity = 0) {
    super();
    this.w = new ProtoBytes(Math.max(64 * 1024, capacity));
  }

  beginPod(sandboxId: string): void {
    this.pod = this.w.begin(POD_ENTRY);
    this.w.string(POD_SANDBOX_ID, sandboxId);
  }

  /** The base labels of the metrics added next (the pod's own, or a container's). */
  beginMetrics(labels: BaseLabels): void {
    this.labels = labels;
    this.labelBytes = undefined;
  }

  beginContainer(containerId: string, labels: BaseLabels): void {
    this.container = this.w.begin(CONTAINER_METRICS);
    this.w.string(CONTAINER_ID, containerId);
    this.beginMetrics(labels);
  }

  endContainer(): void {
    this.w.end(this.container);
    this.container = -1;
  }

  endPod(): void {
    this.w.end(this.pod);
    this.pod = -1;
    this.podEnds.push(this.w.at);
  }

  finish(): EncodedPodMetrics {
    const bytes = this.w.buf.subarray(0, this.w.at);
    let start = 0;
    const pods = this.podEnds.map((end) => bytes.subarray(start, (start = end)));
    return { bytes, pods };
  }

  private extraLabel(text: string): Buffer {
    let field = this.extraLabels.get(text);
    if (field === undefined) {
      const w = new ProtoBytes(text.length * 3 + 8);
      w.string(LABEL_VALUE, text);
      field = w.buf.subarray(0, w.at);
      this.extraLabels.set(text, field);
    }
    return field;
  }

  protected put(s: MetricSpec, value: bigint, extra: readonly string[]): void {
    if (!this.labels) throw new Error('a metric added before its labels were begun');
    const w = this.w;
    const metric = w.begin(this.container === -1 ? POD_METRICS : CONTAINER_METRIC);
    w.bytes(specHead(s));
    let labels = this.labelBytes;
    const first = labels === undefined;
    if (labels) {
      w.again(labels[0], labels[1]);
    } else {
      // Written once per set of labels; every further metric copies these bytes.
      const start = w.at;
      const l = this.labels;
      for (const text of [l.pod, l.namespace, l.container, l.id, l.image]) w.string(LABEL_VALUE, text);
      labels = [start, w.at];
    }
    for (const text of extra) w.bytes(this.extraLabel(text));
    const v = w.begin(METRIC_VALUE);
    if (value !== 0n) {
      w.varint(UINT64_VALUE);
      w.bigVarint(value);
    }
    w.end(v);
    const moved = w.end(metric);
    // The labels moved with the metric they were first written in.
    if (first) this.labelBytes = [labels[0] + moved, labels[1] + moved];
  }
}
