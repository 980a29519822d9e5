/**
 * The server's stderr, line by line, at the level each line was logged at.
 *
 * `scopecache serve` writes `2026-01-02 03:04:05,678 INFO lsp_server.x: text`.
 * The output channel stamps its own time, so the server's is dropped; lines
 * that are not a record (a traceback, argparse's usage message) keep the
 * level of the record they continue, and before any record count as errors
 * when they look like one. No `vscode` import: unit-tested under plain Node.
 */

/** Levels of VS Code's LogOutputChannel. */
export type ChannelLevel = "debug" | "info" | "warn" | "error";

/** One stderr line as the output channel should show it. */
export interface ServerLogLine {
  level: ChannelLevel;
  text: string;
}

const RECORD = /^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[,.]\d+)? (DEBUG|INFO|WARNING|ERROR|CRITICAL) (.*)$/;

const LEVELS: Record<string, ChannelLevel> = {
  DEBUG: "debug",
  INFO: "info",
  WARNING: "warn",
  ERROR: "error",
  CRITICAL: "error",
};

/** Reads the server's stderr in order; keeps the level of the current record. */
export class ServerLogReader {
  private current: ChannelLevel | undefined;

  /** The level and text of one line (without its line break). */
  read(line: string): ServerLogLine {
    const record = RECORD.exec(line);
    if (record) {
      this.current = LEVELS[record[1]];
      return { level: this.current, text: record[2] };
    }
    if (/^Traceback \(most recent call last\):/.test(line) || /(^|: )error: /.test(line)) {
      this.current = "error";
    }
    return { level: this.current ?? "info", text: line };
  }
}
