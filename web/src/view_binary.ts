// Decodes the binary view data (tools/export/view_data_binary.h) into the
// same ViewData the JSON form gives, with typed arrays over the response's
// own buffer: nothing is parsed or copied per node. The tree comes first,
// the samples' count, min and max in a second document (decodeSampleStats).
import type { SampleColumns, ViewData } from './data';

const MAGIC = 'DCVIEW02';
const STATS_MAGIC = 'DCSTAT01';

function reader(buffer: ArrayBuffer, expected: string) {
  const bytes = new Uint8Array(buffer);
  const magic = String.fromCharCode(...bytes.subarray(0, 8));
  if (magic !== expected) throw new Error('not DeepContext view data');
  const headerSize = new DataView(buffer).getUint32(8, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + headerSize)));
  let offset = 12 + headerSize;
  const align = () => { offset = Math.ceil(offset / 8) * 8; };
  align();
  const take = <T>(make: (buffer: ArrayBuffer, offset: number, length: number) => T,
                   length: number, width: number): T => {
    if (offset + length * width > buffer.byteLength) throw new Error('truncated view data');
    const array = make(buffer, offset, length);
    offset += length * width;
    align();
    return array;
  };
  const u32 = (n: number) => take((b, o, l) => new Uint32Array(b, o, l), n, 4);
  const u8 = (n: number) => take((b, o, l) => new Uint8Array(b, o, l), n, 1);
  const f64 = (n: number) => take((b, o, l) => new Float64Array(b, o, l), n, 8);
  return { header, u32, u8, f64 };
}

export function decodeViewBinary(buffer: ArrayBuffer): ViewData {
  const { header, u32, u8, f64 } = reader(buffer, MAGIC);
  const nodes = header.nodeCount as number;
  const frames = header.frameCount as number;
  const parent = u32(nodes);
  const frame = u32(nodes);
  const kind = u8(frames);
  const name = u32(frames);
  const file = u32(frames);
  const line = u32(frames);
  const values = (header.valueCounts as number[]).map((n) => ({
    node: u32(n), sum: f64(n),
  }));
  return {
    format: header.format,
    version: header.version,
    sources: header.sources,
    metrics: header.metrics,
    defaultMetric: header.defaultMetric,
    kinds: header.kinds,
    strings: header.strings,
    frames: { kind, name, file, line },
    nodes: { parent, frame },
    values,
  };
}

// Per metric, the count, min and max of the samples decodeViewBinary's
// values hold, in the same order.
export function decodeSampleStats(buffer: ArrayBuffer): SampleColumns[] {
  const { header, f64 } = reader(buffer, STATS_MAGIC);
  return (header.valueCounts as number[]).map((n) => ({ count: f64(n), min: f64(n), max: f64(n) }));
}
