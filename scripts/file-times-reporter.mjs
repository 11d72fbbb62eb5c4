// A node:test reporter that writes one JSON line per finished top-level test: its file and
// duration. scripts/test.js sums them per file to name the slowest files after a run.
export default async function* fileTimes(source) {
  for await (const event of source) {
    if ((event.type === 'test:pass' || event.type === 'test:fail') && event.data.nesting === 0) {
      yield `${JSON.stringify({ file: event.data.file ?? null, ms: event.data.details?.duration_ms ?? 0 })}\n`;
    }
  }
}
