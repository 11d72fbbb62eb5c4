import { invalidRequest, type ApiError } from '../core/errors.js';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from './passwords.js';

/**
 * Why a password is refused; the message completes "The password ..." and names no secret.
 * Length is checked by the request schema as well; it is here too, so this function is the whole
 * policy wherever a password is set.
 */
export interface PasswordProblem {
  code: 'too_short' | 'too_long' | 'common_password' | 'repeated' | 'consecutive' | 'contains_email';
  message: string;
}

// The list of zxcvbn-ts (about 49,000 passwords from breach corpora, most common first), loaded on
// the first password set rather than at start: it costs about 300 ms and a few MB.
let common: Promise<Set<string>> | null = null;
function commonPasswords(): Promise<Set<string>> {
  return (common ??= import('@zxcvbn-ts/language-common').then((m) => new Set(m.dictionary['passwords-common'])));
}

/** Digits, punctuation and spaces around a word: `Password1234!` is `password` dressed up. */
function core(lowered: string): string {
  return lowered.replace(/^[^\p{L}]+|[^\p{L}]+$/gu, '');
}

/** Each character one code point after (or before) the one before it: `abcdefgh`, `98765432`. */
function consecutive(s: string): boolean {
  const points = [...s].map((c) => c.codePointAt(0) ?? 0);
  const step = (points[1] ?? 0) - (points[0] ?? 0);
  if (step !== 1 && step !== -1) return false;
  return points.every((p, i) => i === 0 || p - (points[i - 1] ?? 0) === step);
}

/** A local part this short (`jo`) is inside too many words to say anything about a password. */
const MIN_LOCAL_PART = 3;

/**
 * The console's password policy (NIST SP 800-63B, 3.1.1.2): 12 to 1024 characters, and not a
 * password attackers try first: one of the most common breached passwords (alone, or with only
 * digits and symbols around it), one short run repeated, a run of consecutive characters, or one
 * that contains the local part of the member's email. Null when the password may be set.
 */
export async function checkPassword(password: string, email: string): Promise<PasswordProblem | null> {
  const length = [...password].length;
  if (length < MIN_PASSWORD_LENGTH) return { code: 'too_short', message: `must be at least ${MIN_PASSWORD_LENGTH} characters` };
  if (length > MAX_PASSWORD_LENGTH) return { code: 'too_long', message: `must be at most ${MAX_PASSWORD_LENGTH} characters` };
  const lowered = password.normalize('NFC').toLowerCase();
  const list = await commonPasswords();
  const word = core(lowered);
  if (list.has(lowered) || (word.length > 0 && list.has(word))) {
    return { code: 'common_password', message: 'is one of the most common passwords in published breaches, or one with digits or symbols added: choose another' };
  }
  const unit = /^(.{1,}?)\1+$/su.exec(lowered)?.[1];
  if (unit !== undefined) return { code: 'repeated', message: 'only repeats a shorter run of characters: choose another' };
  if (consecutive(lowered)) return { code: 'consecutive', message: 'is a run of consecutive characters: choose another' };
  const local = email.slice(0, email.lastIndexOf('@') < 0 ? email.length : email.lastIndexOf('@')).toLowerCase();
  if (local.length >= MIN_LOCAL_PART && lowered.includes(local)) {
    return { code: 'contains_email', message: 'contains your email address (the part before @): choose another' };
  }
  return null;
}

/** The 422 for a refused password, at the request's password field. */
export function passwordRefused(problem: PasswordProblem, loc: string[] = ['body', 'password']): ApiError {
  return invalidRequest([{ loc, message: problem.message, code: problem.code }], `The password ${problem.message}.`);
}
