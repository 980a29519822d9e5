/**
 * Restart backoff for the language server process: exponential delays that
 * start over once the server has stayed up for a while. The clock is injected
 * so tests need no real time.
 */

export const DEFAULT_BASE_MS = 500;
export const DEFAULT_MAX_MS = 30_000;
export const DEFAULT_STABLE_MS = 60_000;

/** Delays before each restart of a crashing server. */
export class RestartBackoff {
  private failures = 0;
  private startedAt: number;

  constructor(
    private readonly now: () => number = Date.now,
    private readonly baseMs = DEFAULT_BASE_MS,
    private readonly maxMs = DEFAULT_MAX_MS,
    private readonly stableMs = DEFAULT_STABLE_MS,
  ) {
    this.startedAt = now();
  }

  /** Call when the server (re)started. */
  started(): void {
    this.startedAt = this.now();
  }

  /** The delay before the next restart, after the server died. */
  nextDelay(): number {
    if (this.now() - this.startedAt >= this.stableMs) {
      this.failures = 0; // it ran fine for a while: this is a new problem, not a crash loop
    }
    const delay = Math.min(this.maxMs, this.baseMs * 2 ** this.failures);
    this.failures += 1;
    return delay;
  }
}
