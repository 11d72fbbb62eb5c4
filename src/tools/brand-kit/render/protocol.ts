import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';
import type { RenderLimits } from './limits.js';

/**
 * The messages between the service and the render's child process (render-child.ts), over
 * Node's IPC channel (the child imports only their types: TypeBox takes a quarter of a second to
 * load, the child's start is paid on every render). Everything the child sends is small and bounded, and checked on arrival:
 * the page's content never travels here; the rendered DOM and the kept resources are files in
 * the render's directory, which the service checks by size before reading.
 */

export interface RenderJob {
  url: string;
  executablePath: string;
  allowPrivate: boolean;
  /** Tests only: these addresses count as allowed, and only these (see outboundRequest's allowAddress). */
  allowAddresses: string[] | null;
  limits: RenderLimits;
  /** Epoch milliseconds by which the page must be read (the service kills the render a grace after it). */
  deadline: number;
  /** The render's own directory: the files it hands back are written here. */
  dir: string;
}

export type ToChild = { type: 'render'; job: RenderJob };

const Text = (max: number) => Type.String({ maxLength: max });
const Hex = Type.String({ pattern: '^#[0-9a-f]{6}$' });
const Count = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
/** A file the child wrote in the render's directory: a bare name, no path. */
const FileName = Type.String({ pattern: '^[a-z0-9-]{1,40}\\.bin$' });

const KeptFileSchema = Type.Object(
  {
    url: Text(8192),
    status: Type.Integer({ minimum: 100, maximum: 599 }),
    contentType: Type.Union([Text(500), Type.Null()]),
    file: FileName,
    bytes: Count,
  },
  { additionalProperties: false },
);
export type KeptFile = Static<typeof KeptFileSchema>;

const ElementSchema = Type.Object(
  {
    fontFamily: Type.Array(Text(200), { maxItems: 20 }),
    color: Type.Union([Hex, Type.Null()]),
    background: Type.Union([Hex, Type.Null()]),
  },
  { additionalProperties: false },
);
const OneElement = Type.Union([ElementSchema, Type.Null()]);

const ChildResultSchema = Type.Object(
  {
    finalUrl: Text(8192),
    htmlFile: FileName,
    htmlBytes: Count,
    truncated: Type.Boolean(),
    computed: Type.Object(
      {
        body: OneElement,
        h1: OneElement,
        h2: OneElement,
        h3: OneElement,
        buttons: Type.Array(ElementSchema, { maxItems: 8 }),
        links: Type.Array(ElementSchema, { maxItems: 12 }),
        header: Type.Array(ElementSchema, { maxItems: 3 }),
      },
      { additionalProperties: false },
    ),
    kept: Type.Array(KeptFileSchema, { maxItems: 150 }),
    stats: Type.Object({ requests: Count, bytes: Count, refused: Count }, { additionalProperties: false }),
  },
  { additionalProperties: false },
);
export type ChildResult = Static<typeof ChildResultSchema>;

const LogFields = Type.Record(Type.String({ maxLength: 40 }), Type.Union([Text(500), Type.Number(), Type.Boolean()]), { maxProperties: 8 });

const FromChildSchema = Type.Union([
  Type.Object({ type: Type.Literal('ready') }, { additionalProperties: false }),
  Type.Object({ type: Type.Literal('done'), result: ChildResultSchema }, { additionalProperties: false }),
  Type.Object({ type: Type.Literal('failed'), message: Text(500) }, { additionalProperties: false }),
  Type.Object({ type: Type.Literal('log'), msg: Text(200), fields: LogFields }, { additionalProperties: false }),
]);
export type FromChild = Static<typeof FromChildSchema>;

/** A message from the child, or null when it is not one of ours (then the render is failed). */
export function checkFromChild(raw: unknown): FromChild | null {
  return Value.Check(FromChildSchema, raw) ? raw : null;
}

