import { closeCompletion } from "@codemirror/autocomplete";
import { SQLite, sql } from "@codemirror/lang-sql";
import { Compartment, Prec } from "@codemirror/state";
import { keymap } from "@codemirror/view";
import { EditorView, basicSetup } from "codemirror";

export interface SqlEditor {
  text(): string;
  setText(text: string): void;
  focus(): void;
  /** Table and column names for completion. */
  setSchema(tables: Record<string, string[]>): void;
}

/** A CodeMirror 6 editor for one SQLite statement; Ctrl-Enter (Cmd-Enter on a Mac) runs it. */
export function createEditor(
  parent: HTMLElement,
  initial: string,
  onRun: () => void,
  onChange: (text: string) => void,
): SqlEditor {
  const language = new Compartment();
  const languageFor = (schema: Record<string, string[]>) =>
    sql({ dialect: SQLite, schema, upperCaseKeywords: true });
  const view = new EditorView({
    parent,
    doc: initial,
    extensions: [
      Prec.highest(
        keymap.of([
          {
            key: "Mod-Enter",
            preventDefault: true,
            run: (view) => {
              closeCompletion(view);
              onRun();
              return true;
            },
          },
        ]),
      ),
      basicSetup,
      language.of(languageFor({})),
      EditorView.lineWrapping,
      EditorView.contentAttributes.of({
        "aria-label": "SQL statement (Ctrl+Enter runs it)",
        "aria-multiline": "true",
      }),
      EditorView.updateListener.of((update) => {
        if (update.docChanged) onChange(update.state.doc.toString());
      }),
    ],
  });
  return {
    text: () => view.state.doc.toString(),
    setText(text) {
      view.dispatch({
        changes: { from: 0, to: view.state.doc.length, insert: text },
        selection: { anchor: text.length },
      });
    },
    focus: () => view.focus(),
    setSchema(tables) {
      view.dispatch({ effects: language.reconfigure(languageFor(tables)) });
    },
  };
}
