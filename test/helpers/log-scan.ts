// Finds credentials in log files: full API keys, webhook signing secrets, the signatures of signed
// URLs and Authorization header values. `npm test` (scripts/test.js) runs it over the logs every
// test process wrote, and fails the run naming file and line, with the secret itself masked.
import fs from 'node:fs';
import path from 'node:path';

export type SecretKind = 'api_key' | 'webhook_secret' | 'url_signature' | 'authorization';

export interface Finding {
  file: string;
  line: number;
  kind: SecretKind;
  /** What was found, with the secret part masked, so the report itself leaks nothing. */
  masked: string;
}

interface Rule {
  kind: SecretKind;
  pattern: RegExp;
  /** How much of the match may be shown: the non-secret lead-in (key env + prefix, parameter name). */
  keep: (match: RegExpExecArray) => number;
}

/** Where the first match of re in text ends (0 when there is none). */
function endOf(re: RegExp, text: string): number {
  const m = re.exec(text);
  return m ? m.index + m[0].length : 0;
}

const RULES: Rule[] = [
  // svc_ env prefix, the 8-character key prefix and the 32-character secret: the whole key. The
  // prefix alone is not secret (Settings lists it), so it is kept to tell which key leaked.
  { kind: 'api_key', pattern: /svc_(?:live|test)_[A-Za-z0-9]{40}/g, keep: () => 'svc_test_'.length + 8 },
  { kind: 'webhook_secret', pattern: /whsec_[A-Za-z0-9_-]{16,}/g, keep: () => 'whsec_'.length },
  // The local backend's `signature=` (HMAC), S3's X-Amz-Signature and session token, as a query
  // parameter, plain or percent-encoded inside another URL.
  {
    kind: 'url_signature',
    pattern: /(?:[?&]|%3F|%26|\\u0026)(?:signature|sig|X-Amz-Signature|X-Amz-Security-Token)(?:=|%3D)(?!\[redacted\])[^&\s"'\\]{8,}/gi,
    keep: (m) => endOf(/=|%3D/i, m[0]),
  },
  // An Authorization header value in any serialisation: JSON, `Name: value`, `name=value`.
  {
    kind: 'authorization',
    pattern: /(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:Bearer|Basic|Token|Digest)\s+(?!\[redacted\])[^\s"',}]{12,}/gi,
    keep: (m) => endOf(/(?:Bearer|Basic|Token|Digest)\s+/i, m[0]),
  },
];

export function maskSecret(text: string, keep: number): string {
  const shown = text.slice(0, Math.max(0, Math.min(keep, text.length)));
  return `${shown}[masked ${text.length - shown.length} chars]`;
}

/** Every credential in the text, with the 1-based line it is on. */
export function scanText(text: string, file = '<text>'): Finding[] {
  const findings: Finding[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    for (const rule of RULES) {
      rule.pattern.lastIndex = 0;
      for (let m = rule.pattern.exec(line); m; m = rule.pattern.exec(line)) {
        findings.push({ file, line: i + 1, kind: rule.kind, masked: maskSecret(m[0], rule.keep(m)) });
      }
    }
  }
  return findings;
}

/** Scans every file under dir (recursively); file names in findings are relative to dir. */
export function scanLogDir(dir: string): { files: number; bytes: number; findings: Finding[] } {
  let files = 0;
  let bytes = 0;
  const findings: Finding[] = [];
  const walk = (d: string) => {
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.isFile()) {
        const text = fs.readFileSync(p, 'utf8');
        files++;
        bytes += Buffer.byteLength(text);
        findings.push(...scanText(text, path.relative(dir, p)));
      }
    }
  };
  if (fs.existsSync(dir)) walk(dir);
  return { files, bytes, findings };
}

export function formatFindings(findings: Finding[]): string {
  return findings.map((f) => `${f.file}:${f.line}: ${f.kind}: ${f.masked}`).join('\n');
}
