import { invalidRequest, type ApiError } from '../core/errors.js';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from './passwords.js';
import { estimateGuesses, JUDGED_CHARACTERS, MIN_GUESSES_LOG10, shortfall } from './password-strength.js';

/**
 * Why a password is refused; the message completes "The password ..." and names no secret.
 * Length is checked by the request schema as well; it is here too, so this function is the whole
 * policy wherever a password is set.
 */
export interface PasswordProblem {
  code:
    | 'too_short'
    | 'too_long'
    | 'contains_email'
    | 'common_password'
    | 'repeated'
    | 'sequence'
    | 'keyboard_pattern'
    | 'date'
    | 'common_words'
    | 'personal'
    | 'too_guessable';
  message: string;
}

/** What an attacker aiming at this account knows. */
export interface PasswordContext {
  email: string;
  teamName?: string;
}

/** A local part this short (`jo`) is inside too many words to say anything about a password. */
const MIN_LOCAL_PART = 3;

/**
 * The console's password policy (NIST SP 800-63B, 3.1.1.2): 12 to 1024 characters, not containing
 * the local part of the member's email, and not guessable in fewer than 10^MIN_GUESSES_LOG10 tries
 * as zxcvbn-ts estimates them (breached-password, word and name lists, keyboard patterns, repeats,
 * sequences, dates, l33t spellings, the email and team name), judged on the first
 * JUDGED_CHARACTERS characters without separators. Null when the password may be set.
 */
export async function checkPassword(password: string, context: PasswordContext): Promise<PasswordProblem | null> {
  const length = [...password].length;
  if (length < MIN_PASSWORD_LENGTH) return { code: 'too_short', message: `must be at least ${MIN_PASSWORD_LENGTH} characters` };
  if (length > MAX_PASSWORD_LENGTH) return { code: 'too_long', message: `must be at most ${MAX_PASSWORD_LENGTH} characters` };
  // On the whole password, not only the judged start, and with a plainer message than zxcvbn's.
  const lowered = password.normalize('NFC').toLowerCase();
  const at = context.email.lastIndexOf('@');
  const local = context.email.slice(0, at < 0 ? context.email.length : at).toLowerCase();
  if (local.length >= MIN_LOCAL_PART && lowered.includes(local)) {
    return { code: 'contains_email', message: 'contains your email address (the part before @): choose another' };
  }
  const strength = await estimateGuesses(password, [context.email, local, ...(context.teamName ? [context.teamName] : [])]);
  if (strength.guessesLog10 >= MIN_GUESSES_LOG10) return null;
  return shortfall(strength);
}

/** The 422 for a refused password, at the request's password field. */
export function passwordRefused(problem: PasswordProblem, loc: string[] = ['body', 'password']): ApiError {
  return invalidRequest([{ loc, message: problem.message, code: problem.code }], `The password ${problem.message}.`);
}
