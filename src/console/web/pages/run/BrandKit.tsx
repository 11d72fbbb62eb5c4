// A brand kit (brand-kit.json of brand_kit_extract, schema_version 1) drawn: its colours as
// swatches with their roles, its fonts by family, and its logos from the run's other outputs.
// Inline SVG markup from a web page is never put into the console's page (it could carry script);
// those logos are listed by where they came from.
import { useEffect, useState } from 'preact/hooks';
import type { ConsoleRun, RunOutput } from '../../api-runs.ts';
import type { ConsoleApi } from '../../api.ts';
import { errorText } from '../../components/load.tsx';
import { useSignedUrl } from './signed-url.ts';

interface Kit {
  object?: string;
  name?: string | null;
  description?: string | null;
  colors?: { hex: string; roles: string[]; weight: number }[];
  fonts?: { family: string; roles: string[]; fallbacks: string[] }[];
  logos?: { kind: string; url: string | null; alt: string | null; file: string | null; width: number | null; height: number | null }[];
  warnings?: string[];
}

const HEX = /^#[0-9a-f]{6}$/i;

/** Black text on light swatches, white on dark (relative luminance 0.179 splits them): at least 4.58:1 either way. */
function inkFor(hex: string): string {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  return 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.179 ? '#000000' : '#ffffff';
}

function Logo(p: { api: ConsoleApi; runId: string; output: RunOutput; alt: string }) {
  const u = useSignedUrl(() => p.api.outputUrl(p.runId, p.output.asset_id));
  return u.url ? <img class="logo" src={u.url} alt={p.alt} /> : <span class="hint">{u.error ?? 'Loading…'}</span>;
}

export function BrandKitView(p: { api: ConsoleApi; run: ConsoleRun; output: RunOutput }) {
  const [kit, setKit] = useState<Kit | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    (async () => {
      const { url } = await p.api.outputUrl(p.run.id, p.output.asset_id);
      const res = await fetch(url, { credentials: 'same-origin' });
      if (!res.ok) throw new Error(`The brand kit could not be read (HTTP ${res.status}).`);
      setKit((await res.json()) as Kit);
    })().catch((err: unknown) => setError(err instanceof Error && !('code' in err) ? err.message : errorText(err)));
  }, []);
  if (error) return <p class="error-text">{error}</p>;
  if (!kit) return <p role="status">Loading the brand kit…</p>;
  if (kit.object !== 'brand_kit') return <p class="hint">A JSON file; download it to read it.</p>;
  const colors = (kit.colors ?? []).filter((c) => HEX.test(c.hex));
  const byFile = new Map(p.run.outputs.map((o) => [o.file_name, o]));
  return (
    <div class="brand-kit">
      {kit.name ? <p class="kit-name">{kit.name}</p> : null}
      {kit.description ? <p class="hint">{kit.description}</p> : null}
      <h4>Colours</h4>
      {colors.length ? (
        <ul class="swatches">
          {colors.map((c) => (
            <li key={c.hex}>
              <span class="swatch" style={{ backgroundColor: c.hex, color: inkFor(c.hex) }}>
                {c.hex}
              </span>
              <span class="hint">{c.roles.length ? c.roles.join(', ') : `${Math.round(c.weight * 100)}% of use`}</span>
            </li>
          ))}
        </ul>
      ) : (
        <p>No colours found.</p>
      )}
      <h4>Fonts</h4>
      {kit.fonts?.length ? (
        <ul class="fonts">
          {kit.fonts.map((f) => (
            <li key={f.family}>
              {/* Shown in the font when this computer has it; the console loads no web fonts. */}
              <span class="font-sample" style={{ fontFamily: [JSON.stringify(f.family), ...f.fallbacks].join(', ') }}>
                {f.family}
              </span>
              {f.roles.length ? <span class="hint"> ({f.roles.join(', ')})</span> : null}
            </li>
          ))}
        </ul>
      ) : (
        <p>No fonts found.</p>
      )}
      <h4>Logos</h4>
      {kit.logos?.length ? (
        <ul class="logos">
          {kit.logos.map((l, i) => {
            const out = l.file ? byFile.get(l.file) : undefined;
            const alt = l.alt || `Logo ${i + 1} (${l.kind.replace(/_/g, ' ')})`;
            return (
              <li key={i}>
                {out ? <Logo api={p.api} runId={p.run.id} output={out} alt={alt} /> : <span>{alt}</span>}
                {l.url ? <span class="hint mono"> {l.url}</span> : null}
              </li>
            );
          })}
        </ul>
      ) : (
        <p>No logos found.</p>
      )}
      {kit.warnings?.length ? (
        <details>
          <summary>What could not be read ({kit.warnings.length})</summary>
          <ul>
            {kit.warnings.map((w, i) => (
              <li key={i}>{w}</li>
            ))}
          </ul>
        </details>
      ) : null}
    </div>
  );
}
