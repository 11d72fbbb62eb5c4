// A succeeded run's outputs, each previewed as fits its kind (an image against its input as a
// before/after comparison, a video in a player, a brand kit drawn) with a Download button. Signed
// URLs live a few minutes, so the preview asks for one when it shows and Download asks for a fresh
// one at the moment of the click.
import { useId, useState } from 'preact/hooks';
import type { ConsoleRun, RunOutput } from '../../api-runs.ts';
import type { ConsoleApi } from '../../api.ts';
import { bytes } from '../../components/format.ts';
import { errorText } from '../../components/load.tsx';
import { BrandKitView } from './BrandKit.tsx';
import { useSignedUrl } from './signed-url.ts';

function Download(p: { api: ConsoleApi; run: ConsoleRun; output: RunOutput }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const download = async () => {
    setBusy(true);
    setError(null);
    try {
      const { url } = await p.api.outputUrl(p.run.id, p.output.asset_id);
      // A link clicked from script: the browser saves the file under its name instead of leaving the page.
      const a = document.createElement('a');
      a.href = url;
      a.download = p.output.file_name;
      a.rel = 'noopener';
      document.body.append(a);
      a.click();
      a.remove();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="download">
      <button type="button" class="primary small" disabled={busy} onClick={() => void download()}>
        Download<span class="visually-hidden"> {p.output.file_name}</span>
      </button>
      {error ? (
        <span role="alert" class="error-text">
          {' '}
          {error}
        </span>
      ) : null}
    </div>
  );
}

/** The input under the output, cut at a slider: left of the cut is before, right of it after. */
function Compare(p: { api: ConsoleApi; run: ConsoleRun; output: RunOutput; inputFileId: string; inputName: string }) {
  const before = useSignedUrl(() => p.api.inputUrl(p.run.id, p.inputFileId));
  const after = useSignedUrl(() => p.api.outputUrl(p.run.id, p.output.asset_id));
  const [cut, setCut] = useState(50);
  const id = useId();
  const ratio = p.output.width && p.output.height ? `${p.output.width} / ${p.output.height}` : undefined;
  if (before.error || after.error) return <p class="error-text">{before.error ?? after.error}</p>;
  if (!before.url || !after.url) return <p role="status">Loading the preview…</p>;
  return (
    <figure class="compare-figure">
      <div class="compare" style={ratio ? { aspectRatio: ratio } : undefined}>
        <img src={after.url} alt={`After: ${p.output.file_name}`} />
        {/* The before image is the same size on screen as the after image, whatever its pixels. */}
        <img class="before" src={before.url} alt={`Before: ${p.inputName}`} style={{ clipPath: `inset(0 ${100 - cut}% 0 0)` }} />
        <span class="compare-line" aria-hidden="true" style={{ left: `${cut}%` }} />
      </div>
      <label for={id}>Compare</label>
      <input
        id={id}
        type="range"
        min={0}
        max={100}
        value={cut}
        aria-valuetext={`${cut}% before, ${100 - cut}% after`}
        onInput={(e) => setCut(Number(e.currentTarget.value))}
      />
      <figcaption class="hint">
        Before ({p.inputName}) on the left of the line, after on the right. Drag the slider or use the arrow keys.
      </figcaption>
    </figure>
  );
}

function ImagePreview(p: { api: ConsoleApi; output: RunOutput; runId: string }) {
  const u = useSignedUrl(() => p.api.outputUrl(p.runId, p.output.asset_id));
  if (u.error) return <p class="error-text">{u.error}</p>;
  return u.url ? <img class="preview" src={u.url} alt={p.output.file_name} /> : <p role="status">Loading the preview…</p>;
}

function VideoPreview(p: { api: ConsoleApi; output: RunOutput; runId: string }) {
  const u = useSignedUrl(() => p.api.outputUrl(p.runId, p.output.asset_id));
  if (u.error) return <p class="error-text">{u.error}</p>;
  return u.url ? (
    <video class="preview" controls preload="metadata" src={u.url} aria-label={p.output.file_name}>
      <track kind="captions" />
    </video>
  ) : (
    <p role="status">Loading the preview…</p>
  );
}

function Preview(p: { api: ConsoleApi; run: ConsoleRun; output: RunOutput }) {
  const mime = p.output.mime_type ?? '';
  if (mime.startsWith('image/')) {
    const input = p.run.input_files.find((f) => (f.mime_type ?? '').startsWith('image/'));
    // One image in, one image out: the comparison. Several outputs (logos of a brand kit) stand alone.
    const imageOutputs = p.run.outputs.filter((o) => (o.mime_type ?? '').startsWith('image/'));
    if (input && imageOutputs.length === 1)
      return <Compare api={p.api} run={p.run} output={p.output} inputFileId={input.file_id} inputName={input.file_name} />;
    return <ImagePreview api={p.api} output={p.output} runId={p.run.id} />;
  }
  if (mime.startsWith('video/')) return <VideoPreview api={p.api} output={p.output} runId={p.run.id} />;
  if (mime === 'application/json' || p.output.file_name.endsWith('.json')) return <BrandKitView api={p.api} run={p.run} output={p.output} />;
  return null;
}

function describe(o: RunOutput): string {
  const parts = [o.mime_type ?? 'file', bytes(o.size_bytes)];
  if (o.width && o.height) parts.push(`${o.width} × ${o.height} px`);
  if (o.duration_seconds) parts.push(`${o.duration_seconds.toFixed(1)} s`);
  return parts.join(' · ');
}

export function Outputs(p: { api: ConsoleApi; run: ConsoleRun }) {
  if (p.run.outputs.length === 0) return <p>This run made no outputs.</p>;
  // A brand kit's logos are drawn inside the kit; they are still listed, each with its download.
  const hasKit = p.run.outputs.some((o) => o.file_name.endsWith('.json'));
  return (
    <>
      {p.run.outputs.map((o) => (
        <article class="card output" key={o.asset_id} aria-label={o.file_name}>
          <h3>{o.file_name}</h3>
          <p class="hint">{describe(o)}</p>
          {hasKit && !o.file_name.endsWith('.json') ? null : <Preview api={p.api} run={p.run} output={o} />}
          <Download api={p.api} run={p.run} output={o} />
        </article>
      ))}
    </>
  );
}
