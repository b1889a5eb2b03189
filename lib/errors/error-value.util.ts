/** Longest rendering of a refused value in an error message (an HTTP 400 body must not echo a long input). */
const MAX_SHOWN = 80;

/**
 * A refused value as an error message shows it: JSON (or `String()`), cut to 80 characters when longer, so that a
 * message never repeats a long input. A cut value is followed by `…(N characters)` when `counted`, N counting the
 * value's own characters (a string's, not its JSON's quotes and escapes); by `…` alone otherwise, for messages whose
 * reason gives the size that matters in its own unit (a lock name's bytes). @internal
 */
export function describeValue(value: unknown, counted = true): string {
  let text: string;
  try {
    text = typeof value === 'bigint' ? `${value}n` : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  if (text.length <= MAX_SHOWN) return text;
  return counted ? shortText(text, typeof value === 'string' ? value : text) : `${cut(text)}…`;
}

/**
 * `text` cut to 80 characters, with `…(N characters)` after it when longer: N counts the characters (code points) of
 * `measured`, the text itself unless given. @internal
 */
export function shortText(text: string, measured = text): string {
  if (text.length <= MAX_SHOWN) return text;
  return `${cut(text)}…(${[...measured].length} characters)`;
}

/** The first 80 UTF-16 units of `text`, cut on a code point boundary (half an emoji would be a lone surrogate). */
function cut(text: string): string {
  return text.slice(0, MAX_SHOWN).replace(/[\ud800-\udbff]$/u, '');
}
