// The image's health check (HEALTHCHECK, compose): exit 0 when this container's `toolrun serve`
// answers GET /healthz on PORT within 4 s, 1 otherwise. A file rather than `node -e '...'`, so no
// compose implementation has to get the quoting of a script right.
const port = process.env.PORT || '8080';
try {
  const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(4000) });
  process.exit(res.ok ? 0 : 1);
} catch {
  process.exit(1);
}
