// The int8 initializers of an ONNX model, read from its protobuf bytes: ONNX Runtime's API does not
// show a model's weights, and the tests check a property of the shipped files themselves.
import fs from 'node:fs/promises';
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';

// Field numbers from onnx.proto: ModelProto.graph, GraphProto.initializer, TensorProto's fields.
const MODEL_GRAPH = 7;
const GRAPH_INITIALIZER = 5;
const TENSOR = { dataType: 2, int32Data: 5, name: 8, rawData: 9 } as const;
const INT8 = 3;

export interface Int8Initializer {
  name: string;
  values: Int8Array;
}

/** Each length-delimited field `field` of a message, as its own bytes. */
function* submessages(bytes: Uint8Array, field: number): Generator<Uint8Array> {
  const reader = new BinaryReader(bytes);
  while (reader.pos < reader.len) {
    const [no, type] = reader.tag();
    if (no === field && type === WireType.LengthDelimited) yield reader.bytes();
    else reader.skip(type, no);
  }
}

function readTensor(bytes: Uint8Array): { name: string; dataType: number; values: Int8Array } {
  const reader = new BinaryReader(bytes);
  let name = '';
  let dataType = 0;
  let raw: Int8Array | null = null;
  const ints: number[] = [];
  while (reader.pos < reader.len) {
    const [no, type] = reader.tag();
    if (no === TENSOR.name) name = reader.string();
    else if (no === TENSOR.dataType) dataType = reader.int32();
    else if (no === TENSOR.rawData) raw = new Int8Array(reader.bytes().slice().buffer);
    else if (no === TENSOR.int32Data && type === WireType.LengthDelimited) {
      // Packed int32_data (int8 tensors stored without raw_data keep one value per int32).
      const packed = new BinaryReader(reader.bytes());
      while (packed.pos < packed.len) ints.push(packed.int32());
    } else if (no === TENSOR.int32Data) ints.push(reader.int32());
    else reader.skip(type, no);
  }
  return { name, dataType, values: raw ?? Int8Array.from(ints) };
}

/** Every int8 initializer of the model at `file` (a QDQ model's quantised weights and zero points). */
export async function int8Initializers(file: string): Promise<Int8Initializer[]> {
  const model = new Uint8Array(await fs.readFile(file));
  const found: Int8Initializer[] = [];
  for (const graph of submessages(model, MODEL_GRAPH)) {
    for (const tensor of submessages(graph, GRAPH_INITIALIZER)) {
      const t = readTensor(tensor);
      if (t.dataType === INT8) found.push({ name: t.name, values: t.values });
    }
  }
  return found;
}
