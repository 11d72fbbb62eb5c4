import { createRequire } from 'node:module';
import type { FastifyServerOptions } from 'fastify';

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
type SerializerFactory = NonNullable<CompilersFactory['buildSerializer']>;
type SerializerCompiler = ReturnType<SerializerFactory>;
type Serializer = ReturnType<SerializerCompiler>;

/** Fastify's own serializer builder (fast-json-stringify), the one it uses when given none. */
function fastifyDefaultSerializerFactory(): SerializerFactory {
  // Resolved from where Fastify is installed: it is Fastify's dependency, and its version is the
  // one Fastify was tested with.
  const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));
  const selector: unknown = fromFastify('@fastify/fast-json-stringify-compiler');
  if (typeof selector !== 'function') throw new Error('@fastify/fast-json-stringify-compiler has an unexpected shape');
  const factory: unknown = selector();
  if (typeof factory !== 'function') throw new Error('@fastify/fast-json-stringify-compiler has an unexpected shape');
  return factory as SerializerFactory;
}

const ANNOTATIONS = new Set(['$ref', 'description', 'title']);

/**
 * What decides a serializer's output. A bare reference (say `{ $ref: 'ErrorResponse',
 * description }`) serializes as its target whatever its description, so all of them share one
 * key; any other schema is keyed by its whole JSON.
 */
function serializerKey(schema: unknown): string {
  if (schema && typeof schema === 'object' && !Array.isArray(schema)) {
    const ref: unknown = (schema as Record<string, unknown>).$ref;
    if (typeof ref === 'string' && Object.keys(schema).every((k) => ANNOTATIONS.has(k))) return `$ref ${ref}`;
  }
  return `schema ${JSON.stringify(schema)}`;
}

/**
 * Fastify's response serializers, each compiled once per distinct schema. Fastify compiles one
 * per route and status; every route lists its error statuses, all references to the one error
 * envelope, so the same serializer was built about 400 times (each with its own Ajv instance for
 * the envelope's nullable fields): some 15 MiB of heap for nothing. Compilation still happens at
 * start-up, so a schema fast-json-stringify cannot take still fails the start.
 */
export function sharedSerializers(): CompilersFactory {
  const defaults = fastifyDefaultSerializerFactory();
  const buildSerializer: SerializerFactory = (externalSchemas, options) => {
    const compile = defaults(externalSchemas, options);
    const compiled = new Map<string, Serializer>();
    return (route) => {
      const key = serializerKey(route.schema);
      let serializer = compiled.get(key);
      if (!serializer) {
        serializer = compile(route);
        compiled.set(key, serializer);
      }
      return serializer;
    };
  };
  return { buildSerializer };
}
