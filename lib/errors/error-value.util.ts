/** Longest rendering of a refused value in an error message (an HTTP 400 body must not echo a long input). */
const MAX_SHOWN = 80;

/**
 * A refused value as an error message shows it: JSON (or `String()`), cut to 80 characters with `…(N characters)`
 * after it when longer, so that a message never repeats a long input. @internal
 */
export function describeValue(value: unknown): string {
  let text: string;
  try {
    text = typeof value === 'bigint' ? `${value}n` : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  return shortText(text);
}

/** `text` cut to 80 characters, with `…(N characters)` after it when longer. @internal */
export function shortText(text: string): string {
  if (text.length <= MAX_SHOWN) return text;
  // Cut on a code point boundary: half an emoji would be a lone surrogate in the message.
  const shown = text.slice(0, MAX_SHOWN).replace(/[\ud800-\udbff]$/u, '');
  return `${shown}…(${text.length} characters)`;
}
