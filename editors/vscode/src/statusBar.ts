/**
 * The status bar item: live hit ratio, the completion server (configured,
 * found on loopback, loading, or none found with the setting to set) and its
 * state from `scopecache/stats`, polled only while a handled document is in
 * view and the window has focus.
 */
import * as vscode from "vscode";

import { LANGUAGES } from "./client";
import {
  type ServerState,
  type ServerStats,
  formatStatsReport,
  noServer,
  serverStateStatus,
  statusText,
  upstreamState,
} from "./stats";

/** Fetches the server's stats; rejects when the server is not running. */
export type StatsSource = () => Promise<ServerStats>;

export class StatsStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private timer: NodeJS.Timeout | undefined;
  private previous: ServerStats | undefined;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(
    private readonly fetchStats: StatsSource,
    private readonly pollMs: () => number,
    private readonly serverState: () => ServerState,
  ) {
    this.item = vscode.window.createStatusBarItem("scopecache.status", vscode.StatusBarAlignment.Right, 100);
    this.item.name = "scopecache";
    this.item.command = "scopecache.showStats";
    this.showState();
    this.subscriptions.push(
      vscode.window.onDidChangeActiveTextEditor(() => this.update()),
      vscode.window.onDidChangeWindowState(() => this.update()),
    );
    this.update();
  }

  private visible(): boolean {
    const editor = vscode.window.activeTextEditor;
    return editor !== undefined && LANGUAGES.includes(editor.document.languageId);
  }

  /** Shows or hides the item and starts or stops polling to match. */
  update(): void {
    if (!this.visible()) {
      this.item.hide();
      this.stopPolling();
      return;
    }
    this.item.show();
    if (vscode.window.state.focused) {
      this.startPolling();
    } else {
      this.stopPolling();
    }
  }

  /** Starts polling again at the configured interval (after it changed). */
  restartPolling(): void {
    this.stopPolling();
    this.update();
  }

  private startPolling(): void {
    if (this.timer === undefined) {
      void this.refresh();
      this.timer = setInterval(() => void this.refresh(), Math.max(1000, this.pollMs()));
    }
  }

  private stopPolling(): void {
    if (this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private showState(): void {
    const state = this.serverState();
    const { text, tooltip } = serverStateStatus(state === "running" ? "starting" : state);
    this.item.text = text;
    this.item.tooltip = tooltip;
    this.item.backgroundColor = undefined;
  }

  /** Polls once and redraws (at once when the server's state changes). */
  async refresh(): Promise<void> {
    if (this.serverState() !== "running") {
      this.showState();
      return;
    }
    try {
      const stats = await this.fetchStats();
      const state = upstreamState(stats, this.previous);
      this.previous = stats;
      this.item.text = statusText(stats, state);
      this.item.tooltip = formatStatsReport(stats, state);
      // No server to ask is worth a glance too: completions are off until one is found or set.
      this.item.backgroundColor =
        state === "down" || noServer(stats)
          ? new vscode.ThemeColor("statusBarItem.warningBackground")
          : undefined;
    } catch {
      const state = this.serverState();
      const { text, tooltip } = serverStateStatus(state === "running" ? "stopped" : state);
      this.item.text = text;
      this.item.tooltip = tooltip;
    }
  }

  dispose(): void {
    this.stopPolling();
    this.subscriptions.forEach((s) => s.dispose());
    this.item.dispose();
  }
}
