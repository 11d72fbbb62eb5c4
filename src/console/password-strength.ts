// How many guesses a password would take, estimated by zxcvbn-ts (its matchers with the common and
// English dictionaries), and why it falls short, in the console's own words.
import type { FeedbackType, ZxcvbnFactory } from '@zxcvbn-ts/core';

/**
 * The estimate a password must reach: 10^10 guesses, zxcvbn's top score ("strong protection from
 * an offline slow-hash attack"). Online, sign-in throttling holds an attacker to a few thousand
 * tries a year; the floor is for the day a copy of the database leaks, when each guess costs one
 * scrypt (docs/decisions.md, "Passwords judged by estimated guesses").
 */
export const MIN_GUESSES_LOG10 = 10;

/**
 * zxcvbn's work, on the event loop, grows with the length times its l33t rewrites of the whole
 * string (each matched against every dictionary at every position): with its defaults (256
 * characters, 100 rewrites) a 1024-character password of digits or l33t symbols took seconds. So
 * only the first 32 characters (after separators are removed) are judged, enough for four random
 * words: a password whose start is weak is refused whatever follows. And at most 50 rewrites:
 * half the time of 100 (bench:password); on 943 l33t spellings of 17 to 32 characters none judged
 * differently, on 4,000 short ones (12 to 16) 19 rose from about 10^8 to 10^10 guesses.
 */
export const JUDGED_CHARACTERS = 32;
const L33T_REWRITES = 50;

/**
 * Passphrases published as examples, which attackers try first: zxcvbn's lists know their words
 * but not the phrases. Written without separators (they are removed before judging).
 */
const PUBLISHED = [
  'correcthorsebatterystaple', // xkcd 936
  'thequickbrownfoxjumpsoverthelazydog',
  'loremipsumdolorsitamet',
];

let factory: Promise<ZxcvbnFactory> | null = null;

/**
 * Built on the first password judged, not at start: loading and ranking the dictionaries costs
 * about 450 CPU ms and 14 MB of heap (bench:password). A failed load is tried again next time.
 */
function zxcvbn(): Promise<ZxcvbnFactory> {
  return (factory ??= Promise.all([import('@zxcvbn-ts/core'), import('@zxcvbn-ts/language-common'), import('@zxcvbn-ts/language-en')]).then(
    ([core, common, en]) =>
      new core.ZxcvbnFactory({
        // A phrase's first JUDGED_CHARACTERS are all of it that is ever judged.
        dictionary: { ...common.dictionary, ...en.dictionary, 'passwords-published': PUBLISHED.map((p) => p.slice(0, JUDGED_CHARACTERS)) },
        graphs: common.adjacencyGraphs,
        l33tMaxSubstitutions: L33T_REWRITES,
        // No translations: feedback comes back as keys, worded below.
      }),
    (err: unknown) => {
      factory = null;
      throw err;
    },
  ));
}

/** Spaces, dots, dashes and underscores between words add almost nothing an attacker must guess. */
export function withoutSeparators(s: string): string {
  return s.replace(/[\s._-]+/gu, '');
}

export interface Strength {
  guessesLog10: number;
  feedback: FeedbackType;
}

/**
 * The estimate for the password's first JUDGED_CHARACTERS characters without separators.
 * `userInputs`: what an attacker aiming at this account knows (the email, the team's name).
 */
export async function estimateGuesses(password: string, userInputs: string[]): Promise<Strength> {
  const z = await zxcvbn();
  const judged = [...withoutSeparators(password.normalize('NFC'))].slice(0, JUDGED_CHARACTERS).join('');
  const inputs = [...new Set(userInputs.flatMap((u) => [u.toLowerCase(), withoutSeparators(u.toLowerCase())]))].filter((u) => u.length >= 3);
  const result = z.check(judged, inputs);
  return { guessesLog10: result.guessesLog10, feedback: result.feedback };
}

type Warning = 'common_password' | 'repeated' | 'sequence' | 'keyboard_pattern' | 'date' | 'common_words' | 'personal' | 'too_guessable';

/** zxcvbn's warning keys, grouped under the codes the 422 carries. */
const WARNINGS: Record<string, Warning> = {
  topTen: 'common_password',
  topHundred: 'common_password',
  common: 'common_password',
  similarToCommon: 'common_password',
  pwned: 'common_password',
  simpleRepeat: 'repeated',
  extendedRepeat: 'repeated',
  sequences: 'sequence',
  straightRow: 'keyboard_pattern',
  keyPattern: 'keyboard_pattern',
  recentYears: 'date',
  dates: 'date',
  wordByItself: 'common_words',
  namesByThemselves: 'common_words',
  commonNames: 'common_words',
  userInputs: 'personal',
};

/** Each completes "The password ...". */
const WHY: Record<Warning, string> = {
  common_password: 'is one of the most common passwords in published breaches, or close to one',
  repeated: 'mostly repeats characters or a short run of them',
  sequence: 'is built on a sequence such as abc or 1234',
  keyboard_pattern: 'is built on a pattern of neighbouring keys such as qwerty',
  date: 'is built around a date or a year',
  common_words: 'is a single common word or name, or a few names',
  personal: "contains your email address or your team's name",
  too_guessable: 'would be guessed too soon',
};

/** zxcvbn's suggestion keys, in plain words; noNeed and pwned say nothing useful here. */
const SUGGESTIONS: Record<string, string> = {
  anotherWord: 'add a word or two that are less common',
  useWords: 'use several words, not a common phrase',
  l33t: 'swapping letters for look-alike symbols (@ for a) does not help',
  reverseWords: 'spelling words backwards does not help',
  capitalization: 'a capital first letter does not help',
  allUppercase: 'all capitals do not help',
  dates: 'leave out dates and years linked to you',
  recentYears: 'leave out recent years',
  associatedYears: 'leave out years linked to you',
  sequences: 'leave out sequences such as abc or 1234',
  repeated: 'leave out repeated words and characters',
  longerKeyboardPattern: 'leave out keyboard patterns',
};

/** Why a password fell short and what would do, as a code and a message completing "The password ...". */
export function shortfall(strength: Strength): { code: Warning; message: string } {
  const code = (strength.feedback.warning && WARNINGS[strength.feedback.warning]) || 'too_guessable';
  const why = code === 'too_guessable' ? `${WHY[code]} (about 10^${Math.floor(strength.guessesLog10)} guesses; at least 10^${MIN_GUESSES_LOG10} are needed)` : WHY[code];
  const advice = strength.feedback.suggestions.map((s) => SUGGESTIONS[s]).filter((s): s is string => s !== undefined);
  const would = 'four or more random words, or 12 or more random characters, would do';
  return { code, message: `${why}: ${[...advice, would].join('; ')}` };
}
