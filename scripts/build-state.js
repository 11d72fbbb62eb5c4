// Whether dist/ holds a build of exactly the current src/: a content fingerprint of every file
// under src/ (and the build's tsconfig), compared with the one the build wrote. Plain JavaScript
// because bin/toolrun.js reads it before any TypeScript loader exists.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export const FINGERPRINT_FILE = 'BUILD_FINGERPRINT';

function listFiles(dir) {
  const out = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listFiles(p));
    else if (entry.isFile()) out.push(p);
  }
  return out;
}

/** sha256 over the relative path and bytes of every source file, in a stable order. */
export function sourceFingerprint(root) {
  const hash = createHash('sha256');
  const srcDir = path.join(root, 'src');
  const files = listFiles(srcDir).sort();
  for (const file of [...files, path.join(root, 'tsconfig.build.json')]) {
    hash.update(path.relative(root, file));
    hash.update('\0');
    hash.update(fs.readFileSync(file));
    hash.update('\0');
  }
  return hash.digest('hex');
}

/** The dist/ directory to run, or null when there is none or it was built from other sources (when there are sources). */
export function freshBuild(root, distDir = path.join(root, 'dist')) {
  let built;
  try {
    built = fs.readFileSync(path.join(distDir, FINGERPRINT_FILE), 'utf8').trim();
  } catch {
    return null;
  }
  // An install that ships the build without its sources (the container image): nothing to be stale against.
  if (built && !fs.existsSync(path.join(root, 'src'))) return distDir;
  try {
    return built === sourceFingerprint(root) ? distDir : null;
  } catch {
    return null;
  }
}
