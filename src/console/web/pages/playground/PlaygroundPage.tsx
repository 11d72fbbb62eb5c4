// Playground: pick a tool (the Tool select, or ?tool=<id> in the address), fill the form built from
// its slots, see the estimate follow the inputs, and Run it. A run started here is an app run: the
// same price, balance and hourly ceiling as through the API, attributed to the signed-in member,
// and shown on its own page. Free teams cannot use it; the page says why.
import { useEffect, useRef, useState } from 'preact/hooks';
import { MEDIA_KINDS, uploadFile, type Estimate, type Tool } from '../../api-runs.ts';
import { ConsoleError, type ConsoleApi } from '../../api.ts';
import { FormError, SelectField } from '../../components/field.tsx';
import { num } from '../../components/format.ts';
import { errorText, Loading, useLoad } from '../../components/load.tsx';
import { PageTitle } from '../../components/page.tsx';
import { BASE, navigate } from '../../router.tsx';
import { SlotField, type MediaItem, type SlotValue } from './SlotField.tsx';

/** Waits this long after the last change before asking for an estimate (typing a number). */
const ESTIMATE_DELAY_MS = 350;
let uploadKeys = 0;

function defaults(tool: Tool): Record<string, SlotValue> {
  const out: Record<string, SlotValue> = {};
  for (const s of tool.inputs) {
    const d = s.default;
    if (typeof d === 'string' || typeof d === 'number' || typeof d === 'boolean') out[s.name] = d;
    else if (s.kind === 'bool') out[s.name] = false;
  }
  return out;
}

/** The inputs as the API takes them, and why they cannot be estimated yet (uploads, empty required files). */
function buildInputs(tool: Tool, values: Record<string, SlotValue>, media: Record<string, MediaItem[]>) {
  const inputs: Record<string, unknown> = {};
  let waiting: string | null = null;
  for (const s of tool.inputs) {
    if (MEDIA_KINDS.includes(s.kind)) {
      const items = media[s.name] ?? [];
      if (items.some((m) => !m.fileId && !m.error)) waiting = 'Waiting for the uploads to finish.';
      const ids = items.flatMap((m) => (m.fileId ? [m.fileId] : []));
      if (ids.length) inputs[s.name] = ids;
      else if (s.required) waiting ??= 'Choose the files to see the exact price.';
      continue;
    }
    const v = values[s.name];
    if (v === undefined || v === '') continue;
    if (s.kind === 'element') inputs[s.name] = String(v).split(/[\s,]+/).filter(Boolean);
    else inputs[s.name] = v;
  }
  return { inputs, waiting };
}

function ToolForm(p: { api: ConsoleApi; tool: Tool }) {
  const { tool } = p;
  const [values, setValues] = useState<Record<string, SlotValue>>(() => defaults(tool));
  const [media, setMedia] = useState<Record<string, MediaItem[]>>({});
  const [fields, setFields] = useState<Record<string, string>>({});
  const [estimate, setEstimate] = useState<Estimate | null>(null);
  const [estimateNote, setEstimateNote] = useState<string | null>(null);
  const [formError, setFormError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const built = buildInputs(tool, values, media);
  const key = JSON.stringify(built.inputs);
  const generation = useRef(0);

  // The estimate follows the inputs, a moment after the last change; an older answer never wins.
  useEffect(() => {
    const mine = ++generation.current;
    setEstimate(null);
    if (built.waiting) {
      setEstimateNote(built.waiting);
      return;
    }
    setEstimateNote('Estimating…');
    const timer = setTimeout(() => {
      p.api.estimate(tool.id, built.inputs).then(
        (e) => {
          if (mine !== generation.current) return;
          setEstimate(e);
          setEstimateNote(null);
          setFields({});
        },
        (err: unknown) => {
          if (mine !== generation.current) return;
          setFields(inputErrors(err));
          setEstimateNote(errorText(err));
        },
      );
    }, ESTIMATE_DELAY_MS);
    return () => clearTimeout(timer);
  }, [key, built.waiting]);

  const onFiles = async (slot: string, files: File[]) => {
    const items = files.map((f) => ({ key: ++uploadKeys, name: f.name, progress: 0, fileId: null, error: null }));
    setMedia((m) => ({ ...m, [slot]: items }));
    const update = (k: number, change: Partial<MediaItem>) =>
      setMedia((m) => ({ ...m, [slot]: (m[slot] ?? []).map((it) => (it.key === k ? { ...it, ...change } : it)) }));
    // One file after another: each part PUT already uses the connection fully.
    for (const [i, file] of files.entries()) {
      const item = items[i]!;
      try {
        const done = await uploadFile(p.api, file, (progress) => update(item.key, { progress }));
        update(item.key, done.status === 'ready' ? { fileId: done.id, progress: 1 } : { error: done.problem ?? 'The file was rejected.' });
      } catch (err) {
        update(item.key, { error: err instanceof ConsoleError || !(err instanceof Error) ? errorText(err) : err.message });
      }
    }
  };

  const run = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setFormError(null);
    try {
      const started = await p.api.startRun(tool.id, built.inputs);
      navigate(`${BASE}/runs/${started.id}`);
    } catch (err) {
      const f = inputErrors(err);
      setFields(f);
      if (Object.keys(f).length === 0) setFormError(errorText(err));
      else requestAnimationFrame(() => document.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus());
      setBusy(false);
    }
  };

  return (
    <form onSubmit={(e) => void run(e)} noValidate aria-labelledby="tool-form-heading">
      <h2 id="tool-form-heading">{tool.name}</h2>
      <p class="hint">{tool.description}</p>
      {tool.inputs.map((s) => (
        <SlotField
          key={s.name}
          slot={s}
          value={values[s.name]}
          media={media[s.name] ?? []}
          error={fields[s.name]}
          onValue={(v) => setValues((old) => ({ ...old, [s.name]: v }))}
          onFiles={(files) => void onFiles(s.name, files)}
        />
      ))}
      <div class="estimate" role="status">
        {estimate ? (
          <p>
            <strong>Estimate: {num(estimate.sparks)} Sparks</strong>
            <span class="hint-inline"> ({num(estimate.reserve_sparks)} held while it runs; what is not used comes back)</span>
          </p>
        ) : (
          <p>
            {tool.estimate_hint.sparks_min === tool.estimate_hint.sparks_max
              ? `${num(tool.estimate_hint.sparks_min)} Sparks. `
              : `From ${num(tool.estimate_hint.sparks_min)} to ${num(tool.estimate_hint.sparks_max)} Sparks. `}
            <span class="hint-inline">{estimateNote}</span>
          </p>
        )}
      </div>
      <FormError message={formError} />
      <button type="submit" class="primary" disabled={busy || Boolean(built.waiting)}>
        Run
      </button>
    </form>
  );
}

/** A 422's errors on tool inputs, by slot name. */
function inputErrors(err: unknown): Record<string, string> {
  if (!(err instanceof ConsoleError)) return {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(err.fields)) if (k.startsWith('inputs.')) out[k.slice('inputs.'.length)] = v;
  return out;
}

function wantedTool(): string | null {
  return new URLSearchParams(location.search).get('tool');
}

export function PlaygroundPage(p: { api: ConsoleApi }) {
  const [loaded] = useLoad(() => p.api.listTools());
  const [toolId, setToolId] = useState<string | null>(wantedTool);
  const list = loaded.state === 'ready' ? loaded.value : null;
  const tool = list ? (list.data.find((t) => t.id === toolId) ?? list.data.find((t) => t.allowed) ?? list.data[0]) : undefined;
  const choose = (id: string) => {
    setToolId(id);
    // The address names the tool, so a link or a reload comes back to it.
    history.replaceState(null, '', `${BASE}/playground?tool=${encodeURIComponent(id)}`);
  };
  return (
    <>
      <PageTitle title="Playground" />
      <p>
        Try a tool on your own files. A run started here costs the same Sparks as through the API and counts toward the team's hourly
        ceiling; it is listed on the Runs page as an App run.
      </p>
      <Loading loaded={loaded} />
      {list && !list.playground.allowed ? (
        <div class="notice" role="note">
          <h2>The playground is not available to this team</h2>
          <p>{list.playground.reason ?? 'Your team’s plan does not include the playground.'}</p>
        </div>
      ) : null}
      {list && list.playground.allowed && tool ? (
        <>
          <SelectField
            label="Tool"
            value={tool.id}
            options={list.data.map((t) => ({ value: t.id, label: t.allowed ? t.name : `${t.name} (not on this plan)` }))}
            onValue={choose}
          />
          {tool.allowed ? (
            <ToolForm key={tool.id} api={p.api} tool={tool} />
          ) : (
            <p class="notice">{tool.name} is not included in your team’s plan.</p>
          )}
        </>
      ) : null}
    </>
  );
}
