// The resolve hook of module-record.mjs (it runs on the loader thread). Synchronous appends, so
// every line is on disk before the module that was asked for runs.
import fs from 'node:fs';

let file = '';

export function initialize(data) {
  file = data.file;
}

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  fs.appendFileSync(file, `${resolved.url}\n`);
  return resolved;
}
