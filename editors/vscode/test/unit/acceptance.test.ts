/** Partial accepts: which suggestion the document holds the start of, and what to report. */
import assert from "node:assert/strict";
import { test } from "node:test";

import { type ShownSuggestion, acceptedLength, newestHeld, partialAcceptArguments } from "../../src/acceptance";

function shown(text: string, overrides: Partial<ShownSuggestion> = {}): ShownSuggestion {
  return {
    uri: "file:///w/headers.py",
    line: 4,
    character: 4,
    text,
    args: ["s3", { source: "upstream" }],
    reported: 0,
    ...overrides,
  };
}

test("the document holds the start of a suggestion up to the cursor", () => {
  const suggestion = shown('key, _, value = line.partition(":")\n    return key');
  assert.equal(acceptedLength(suggestion, "key"), 3);
  assert.equal(acceptedLength(suggestion, 'key, _, value = line.partition(":")\n'), 36);
  assert.equal(acceptedLength(suggestion, "kex"), undefined);
  assert.equal(acceptedLength(suggestion, ""), undefined);
});

test("a word or line accept reports the item's arguments plus kind and length", () => {
  const suggestion = shown("key, _, value");
  assert.deepEqual(partialAcceptArguments(suggestion, "word", 3), [
    "s3",
    { source: "upstream" },
    { kind: "word", acceptedLength: 3 },
  ]);
});

test("nothing new, or all of it, is not reported as a partial accept", () => {
  assert.equal(partialAcceptArguments(shown("key, _", { reported: 3 }), "word", 3), undefined);
  // VS Code runs the item's own command when a word or line accept takes the rest
  assert.equal(partialAcceptArguments(shown("key"), "word", 3), undefined);
});

test("the newest suggestion the document holds is the one on screen", () => {
  const older = shown("key, _, value", { args: ["s1"] });
  const newer = shown(", _, value", { args: ["s2"], character: 7 });
  const found = newestHeld([older, newer], (s) => (s === newer ? 3 : 6));
  assert.equal(found?.suggestion, newer);
  assert.equal(found?.length, 3);
  assert.equal(newestHeld([older], () => undefined), undefined);
});
