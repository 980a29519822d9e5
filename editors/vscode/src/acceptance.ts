/**
 * What a partial accept tells the server, worked out without `vscode` (unit-tested
 * under plain Node): which of the suggestions shown the document now holds the
 * start of, and the arguments of `scopecache.accepted` for it.
 */

/** How much of a suggestion an accept took. */
export type AcceptKind = "full" | "word" | "line";

/** One inline suggestion the server sent, as the extension remembers it. */
export interface ShownSuggestion {
  /** The document it was shown in. */
  uri: string;
  /** Where its text starts: line and character (UTF-16 code units, as VS Code counts). */
  line: number;
  character: number;
  /** Its insert text. */
  text: string;
  /** The arguments of its `scopecache.accepted` command: `[itemId, {source}]`. */
  args: unknown[];
  /** How much of its text was reported accepted so far. */
  reported: number;
}

/**
 * How much of `suggestion` the document holds, given the document's text from
 * the suggestion's start to the cursor: its length when that text starts the
 * suggestion, else undefined.
 */
export function acceptedLength(suggestion: ShownSuggestion, typed: string): number | undefined {
  return typed.length > 0 && suggestion.text.startsWith(typed) ? typed.length : undefined;
}

/**
 * The arguments for `scopecache.accepted` after a word or line accept that left
 * `length` of the suggestion in the document; undefined when there is nothing
 * new to report, or when the accept took all of it (VS Code then runs the
 * item's own command, a full accept).
 */
export function partialAcceptArguments(
  suggestion: ShownSuggestion,
  kind: AcceptKind,
  length: number,
): unknown[] | undefined {
  if (length <= suggestion.reported || length >= suggestion.text.length) {
    return undefined;
  }
  return [...suggestion.args, { kind, acceptedLength: length }];
}

/** The newest of `shown` (oldest first) that `holds` says the document holds the start of. */
export function newestHeld(
  shown: readonly ShownSuggestion[],
  holds: (suggestion: ShownSuggestion) => number | undefined,
): { suggestion: ShownSuggestion; length: number } | undefined {
  for (let i = shown.length - 1; i >= 0; i--) {
    const length = holds(shown[i]);
    if (length !== undefined) {
      return { suggestion: shown[i], length };
    }
  }
  return undefined;
}
