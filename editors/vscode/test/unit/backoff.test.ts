/** Restart backoff: doubling delays while the server keeps crashing, reset once it ran stably. */
import assert from "node:assert/strict";
import { test } from "node:test";

import { RestartBackoff } from "../../src/backoff";

test("quick crashes double the delay up to the cap", () => {
  const now = 0;
  const backoff = new RestartBackoff(() => now, 100, 1000, 60_000);
  assert.deepEqual(
    [1, 2, 3, 4, 5].map(() => backoff.nextDelay()),
    [100, 200, 400, 800, 1000],
  );
});

test("a server that stayed up for a while restarts at the base delay", () => {
  let now = 0;
  const backoff = new RestartBackoff(() => now, 100, 1000, 60_000);
  backoff.nextDelay();
  backoff.nextDelay();
  backoff.started();
  now += 60_000;
  assert.equal(backoff.nextDelay(), 100);
});
