/**
 * Word and line accepts of inline suggestions, reported to the server.
 *
 * VS Code runs an accepted item's command only when the whole suggestion is
 * taken; its hook for partial accepts (`handleDidPartiallyAcceptCompletionItem`)
 * is a proposed API that a published extension cannot use, and
 * vscode-languageclient does not offer one. So the extension contributes its
 * own "accept next word / line" commands, bound to Ctrl+Right (VS Code's key
 * for the next word) and Alt+L while a suggestion is visible. Each runs VS
 * Code's command, then looks at how much of the suggestion the document now
 * holds (from the suggestions the language client received, remembered by
 * `ShownSuggestions` through the client's middleware) and sends
 * `scopecache.accepted` with the item's arguments plus
 * `{kind, acceptedLength}`.
 */
import * as vscode from "vscode";

import { type AcceptKind, type ShownSuggestion, acceptedLength, newestHeld, partialAcceptArguments } from "./acceptance";
import { ACCEPTED_COMMAND } from "./stats";

export const ACCEPT_NEXT_WORD = "scopecache.acceptNextWord";
export const ACCEPT_NEXT_LINE = "scopecache.acceptNextLine";
/** Suggestions remembered (the newest ones; a partial accept concerns the one on screen). */
const KEPT = 16;
/** How long to wait for the document to show a partial accept, milliseconds. */
const EDIT_WAIT_MS = 500;

/** The latest inline suggestions the server sent, as the language client converted them. */
export class ShownSuggestions {
  private shown: ShownSuggestion[] = [];

  /** Remembers the scopecache items of one answer (`position`: where it was asked). */
  remember(
    document: vscode.TextDocument,
    position: vscode.Position,
    result: vscode.InlineCompletionItem[] | vscode.InlineCompletionList | null | undefined,
  ): void {
    const items = Array.isArray(result) ? result : (result?.items ?? []);
    for (const item of items) {
      const args = item.command?.arguments;
      if (item.command?.command !== ACCEPTED_COMMAND || !args || typeof item.insertText !== "string") {
        continue;
      }
      const start = item.range?.start ?? position;
      this.shown.push({
        uri: document.uri.toString(),
        line: start.line,
        character: start.character,
        text: item.insertText,
        args: [...args],
        reported: 0,
      });
    }
    if (this.shown.length > KEPT) {
      this.shown = this.shown.slice(-KEPT);
    }
  }

  /** The newest suggestion whose start the document holds up to `cursor`, and how much of it. */
  heldAt(document: vscode.TextDocument, cursor: vscode.Position): { suggestion: ShownSuggestion; length: number } | undefined {
    const uri = document.uri.toString();
    return newestHeld(this.shown, (suggestion) => {
      const start = new vscode.Position(suggestion.line, suggestion.character);
      if (suggestion.uri !== uri || start.isAfter(cursor)) {
        return undefined;
      }
      return acceptedLength(suggestion, document.getText(new vscode.Range(start, cursor)));
    });
  }

  clear(): void {
    this.shown = [];
  }
}

/** Sends `scopecache.accepted` with these arguments to the running server. */
export type AcceptReporter = (args: unknown[]) => Promise<unknown> | undefined;

/** Registers the word and line accept commands. */
export function registerPartialAccepts(shown: ShownSuggestions, report: AcceptReporter): vscode.Disposable {
  const accept = async (kind: AcceptKind, builtin: string): Promise<void> => {
    const editor = vscode.window.activeTextEditor;
    const edited = editor ? nextEdit(editor.document) : undefined;
    await vscode.commands.executeCommand(builtin);
    if (!editor || !edited) {
      return;
    }
    await edited;
    const held = shown.heldAt(editor.document, editor.selection.active);
    const args = held && partialAcceptArguments(held.suggestion, kind, held.length);
    if (held && args) {
      held.suggestion.reported = held.length;
      await report(args);
    }
  };
  return vscode.Disposable.from(
    vscode.commands.registerCommand(ACCEPT_NEXT_WORD, () =>
      accept("word", "editor.action.inlineSuggest.acceptNextWord"),
    ),
    vscode.commands.registerCommand(ACCEPT_NEXT_LINE, () =>
      accept("line", "editor.action.inlineSuggest.acceptNextLine"),
    ),
  );
}

/** Resolves at the next change of `document`, or after `EDIT_WAIT_MS` (no edit came). */
function nextEdit(document: vscode.TextDocument): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, EDIT_WAIT_MS);
    const listener = vscode.workspace.onDidChangeTextDocument((event) => {
      if (event.document === document) {
        done();
      }
    });
    function done(): void {
      clearTimeout(timer);
      listener.dispose();
      resolve();
    }
  });
}
