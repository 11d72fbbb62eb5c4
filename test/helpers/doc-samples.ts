// The code samples of docs/*.md as test/docs-samples.test.ts runs them: the pages in the order
// docs/README.md links them, their fenced blocks, and the `<!-- sample: ... -->` directive before
// each (the convention is described in docs/README.md).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './process.js';
import { SAMPLE_TIMEOUT_MS, typecheck } from './sample-runner.js';

export const DOCS = path.join(ROOT, 'docs');
const RUNNABLE = ['sh', 'ts', 'js'] as const;
type RunnableLang = (typeof RUNNABLE)[number];
/** Fences that look like code in a language the runner does not take: write sh, ts or js. */
const REFUSED_LANGS = ['bash', 'shell', 'zsh', 'console', 'typescript', 'javascript', 'mjs', 'cjs', 'tsx', 'jsx', 'env'];

export interface Directives {
  skip: string | null;
  server: boolean;
  background: boolean;
  ready: RegExp | null;
  expect: RegExp[];
  files: string[];
}

export interface Sample {
  page: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  code: string;
  directives: Directives;
}

export const isRunnable = (lang: string): lang is RunnableLang => (RUNNABLE as readonly string[]).includes(lang);

/** A sample's name in file names: the page and the line of its fence. */
export const sampleName = (s: Sample) => `${s.page.replace(/\.md$/, '')}-L${s.line}`;

function regex(source: string, where: string): RegExp {
  try {
    return new RegExp(source, 'm');
  } catch (err) {
    throw new Error(`${where}: bad regular expression ${JSON.stringify(source)}: ${(err as Error).message}`);
  }
}

export function parseDirectives(text: string, where: string): Directives {
  const d: Directives = { skip: null, server: false, background: false, ready: null, expect: [], files: [] };
  // A skip is alone, and its reason is free text (semicolons included).
  const skip = /^\s*skip(?:\s+(.*?))?\s*$/s.exec(text);
  if (skip) {
    if (!skip[1]) throw new Error(`${where}: "skip" needs a reason`);
    d.skip = skip[1];
    return d;
  }
  for (const raw of text.split(';')) {
    const item = raw.trim();
    if (!item) continue;
    const space = item.indexOf(' ');
    const name = space < 0 ? item : item.slice(0, space);
    const arg = space < 0 ? '' : item.slice(space + 1).trim();
    switch (name) {
      case 'skip':
        throw new Error(`${where}: a skipped sample takes no other directive`);
      case 'server':
      case 'background':
        if (arg) throw new Error(`${where}: "${name}" takes no argument`);
        d[name] = true;
        break;
      case 'ready':
        if (!arg) throw new Error(`${where}: "ready" needs a regular expression`);
        d.ready = regex(arg, where);
        break;
      case 'expect':
        if (!arg) throw new Error(`${where}: "expect" needs a regular expression`);
        d.expect.push(regex(arg, where));
        break;
      case 'files':
        if (!arg) throw new Error(`${where}: "files" needs paths`);
        d.files.push(...arg.split(/\s+/));
        break;
      default:
        throw new Error(`${where}: unknown sample directive "${name}" (see docs/README.md)`);
    }
  }
  if (d.ready && !d.background) throw new Error(`${where}: "ready" is for background samples`);
  if (d.background && !d.ready) throw new Error(`${where}: a background sample needs "ready"`);
  if (d.server && (d.background || d.expect.length || d.files.length)) throw new Error(`${where}: "server" takes no other directive`);
  return d;
}

/** The fenced code blocks of a Markdown page, with the directive comment right before each. */
export function parseSamples(page: string, markdown: string): Sample[] {
  const lines = markdown.split('\n');
  const samples: Sample[] = [];
  const directiveRe = /^\s*<!--\s*sample:(.*?)-->\s*$/;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const open = /^( {0,3})(`{3,}|~{3,})\s*([^\s`]*)[^`]*$/.exec(line);
    if (!open) {
      const stray = directiveRe.exec(line);
      if (stray && !/^( {0,3})(`{3,}|~{3,})/.test(lines[i + 1] ?? '')) {
        throw new Error(`${page}:${i + 1}: a sample directive must be on the line right before a fence`);
      }
      continue;
    }
    const indent = open[1]?.length ?? 0;
    const fence = open[2] ?? '```';
    const lang = (open[3] ?? '').toLowerCase();
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length; i++) {
      const l = lines[i] ?? '';
      const close = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(l);
      if (close && close[1]?.[0] === fence[0] && (close[1]?.length ?? 0) >= fence.length) break;
      body.push(l.replace(new RegExp(`^ {0,${indent}}`), ''));
    }
    assert.ok(i < lines.length, `${page}:${start + 1}: the fence is never closed`);
    const where = `${page}:${start + 1}`;
    const directive = directiveRe.exec(lines[start - 1] ?? '');
    const directives = directive ? parseDirectives(directive[1] ?? '', where) : parseDirectives('', where);
    if (!lang) throw new Error(`${where}: say what the block is (\`\`\`sh, \`\`\`ts, \`\`\`js, or \`\`\`text for output)`);
    if (REFUSED_LANGS.includes(lang)) throw new Error(`${where}: write \`\`\`sh, \`\`\`ts or \`\`\`js (or \`\`\`dotenv), not \`\`\`${lang}`);
    if (directive && !isRunnable(lang) && !(lang === 'dotenv' && directives.skip)) {
      throw new Error(`${where}: only sh, ts and js samples take directives, not \`\`\`${lang || '(no language)'}`);
    }
    samples.push({ page, line: start + 1, lang, code: body.join('\n'), directives });
  }
  return samples;
}

/** The pages, in the order docs/README.md links them. */
function docPages(): string[] {
  const index = fs.readFileSync(path.join(DOCS, 'README.md'), 'utf8');
  const pages: string[] = [];
  for (const m of index.matchAll(/\]\(([a-z0-9-]+\.md)\)/g)) {
    const page = m[1] ?? '';
    if (page !== 'decisions.md' && !pages.includes(page)) pages.push(page);
  }
  return pages;
}

/** Every page and its samples, in page order. */
export function loadDocSamples(): { pages: string[]; samplesByPage: Map<string, Sample[]>; allSamples: Sample[]; tsSamples: Sample[] } {
  const pages = docPages();
  const samplesByPage = new Map(pages.map((p) => [p, parseSamples(p, fs.readFileSync(path.join(DOCS, p), 'utf8'))]));
  const allSamples = [...samplesByPage.values()].flat();
  const tsSamples = allSamples.filter((s) => s.lang === 'ts' && !s.directives.skip);
  return { pages, samplesByPage, allSamples, tsSamples };
}

/**
 * Why the TypeScript samples cannot run: only when the SDK package itself is not there (another
 * part of the project builds it). Any other failure to load it fails the samples instead.
 */
export async function sdkMissingReason(): Promise<string | null> {
  const specifier = '@toolrun/sdk';
  try {
    await import(specifier);
    return null;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const entry = path.join(ROOT, 'packages', 'sdk', 'src', 'index.ts');
    if (e.code === 'ERR_MODULE_NOT_FOUND' && (e.message.includes(`'${specifier}'`) || e.message.includes(entry))) {
      return `the SDK package @toolrun/sdk (packages/sdk) is not there yet, so the TypeScript samples cannot run: ${e.message.split('\n')[0]}`;
    }
    return null;
  }
}

/** Type-checks TypeScript samples against the SDK (strict); the diagnostics name each by page and line. */
export function typecheckSamples(samples: Sample[]): { diagnostics: string[]; all: string } {
  const programs = Object.fromEntries(samples.map((s) => [sampleName(s), s.code]));
  return typecheck(programs, { prefix: 'docs-typecheck-', timeoutMs: SAMPLE_TIMEOUT_MS });
}
