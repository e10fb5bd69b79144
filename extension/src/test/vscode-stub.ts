import type * as vscode from 'vscode';

/*
 * A typed stand-in for the parts of the `vscode` module the extension uses, for unit tests
 * (`vi.mock('vscode', () => import('./test/vscode-stub'))`). UI prompts answer from queues the
 * test fills (`ui.answers`), and everything shown is recorded (`ui.shown`).
 */

type Listener<T> = (event: T) => unknown;

export class EventEmitter<T> implements vscode.EventEmitter<T> {
  private listeners = new Set<Listener<T>>();
  event: vscode.Event<T> = (listener) => {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  };
  fire(data: T): void {
    for (const listener of [...this.listeners]) listener(data);
  }
  dispose(): void {
    this.listeners.clear();
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly path: string,
    readonly query = '',
    readonly authority = '',
  ) {}
  static parse(value: string): Uri {
    const url = new URL(value);
    return new Uri(url.protocol.replace(':', ''), url.pathname, url.search.slice(1), url.host);
  }
  static file(path: string): Uri {
    return new Uri('file', path);
  }
  static from(parts: { scheme: string; path?: string; query?: string }): Uri {
    return new Uri(parts.scheme, parts.path ?? '', parts.query ?? '');
  }
  static joinPath(base: Uri, ...segments: string[]): Uri {
    return new Uri(base.scheme, [base.path, ...segments].join('/'));
  }
  readonly fragment = '';
  get fsPath(): string {
    return this.path;
  }
  with(change: { scheme?: string; path?: string; query?: string; authority?: string }): Uri {
    return new Uri(change.scheme ?? this.scheme, change.path ?? this.path, change.query ?? this.query, change.authority ?? this.authority);
  }
  toJSON(): unknown {
    return { scheme: this.scheme, authority: this.authority, path: this.path, query: this.query };
  }
  toString(): string {
    return `${this.scheme}:${this.authority ? `//${this.authority}` : ''}${this.path}${this.query ? `?${this.query}` : ''}`;
  }
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(startLine: number, startCharacter: number, endLine: number, endCharacter: number) {
    this.start = new Position(startLine, startCharacter);
    this.end = new Position(endLine, endCharacter);
  }
  get isEmpty(): boolean {
    return this.start.line === this.end.line && this.start.character === this.end.character;
  }
}

export class Selection extends Range {}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}
export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}
export enum QuickPickItemKind {
  Separator = -1,
  Default = 0,
}
export enum ConfigurationTarget {
  Global = 1,
  Workspace = 2,
  WorkspaceFolder = 3,
}
export enum TreeItemCollapsibleState {
  None = 0,
  Collapsed = 1,
  Expanded = 2,
}
export enum CommentMode {
  Editing = 0,
  Preview = 1,
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export enum TreeItemCheckboxState {
  Unchecked = 0,
  Checked = 1,
}

export class TreeItem {
  checkboxState?: { state: TreeItemCheckboxState; tooltip?: string; accessibilityInformation?: { label: string; role?: string } };
  description?: string;
  resourceUri?: Uri;
  contextValue?: string;
  tooltip?: string;
  command?: { command: string; title: string; arguments?: unknown[] };
  constructor(
    readonly label: string,
    readonly collapsibleState?: TreeItemCollapsibleState,
  ) {}
}

/** What the UI showed, and the answers it will give next. */
export const ui = {
  shown: [] as Array<{ kind: string; message: string; items?: string[]; buttons?: string[] }>,
  /** Answers for showQuickPick / createQuickPick (a label prefix), showInputBox and showWarningMessage, in order. */
  answers: [] as Array<string | undefined>,
  quickPickItems: [] as string[][],
  reset(): void {
    this.shown = [];
    this.answers = [];
    this.quickPickItems = [];
    settings.clear();
    window.activeTextEditor = undefined;
    workspace.workspaceFolders = [{ uri: Uri.file('/repo'), name: 'repo', index: 0 }];
  },
  next(kind: string): string | undefined {
    if (this.answers.length === 0) throw new Error(`The test gave no answer for a ${kind}`);
    return this.answers.shift();
  },
};

type Item = string | { label: string };
const labelOf = (item: Item): string => (typeof item === 'string' ? item : item.label);

function record(kind: string) {
  return async (message: string, ...rest: unknown[]): Promise<string | undefined> => {
    const buttons = rest.filter((value): value is string => typeof value === 'string');
    ui.shown.push({ kind, message, ...(buttons.length ? { buttons } : {}) });
    if ((kind === 'warning' && buttons.length) || (kind === 'error' && buttons.length && ui.answers.length)) return ui.next(kind);
    return undefined;
  };
}

export const settings = new Map<string, unknown>();

export const window = {
  activeTextEditor: undefined as unknown,
  showInformationMessage: record('info'),
  showWarningMessage: record('warning'),
  showErrorMessage: record('error'),
  async showQuickPick<T extends Item>(items: readonly T[] | Promise<readonly T[]>): Promise<T | undefined> {
    const list = await items;
    ui.quickPickItems.push(list.map(labelOf));
    const answer = ui.next('quick pick');
    return answer === undefined ? undefined : list.find((item) => labelOf(item).startsWith(answer));
  },
  async showInputBox(options?: { validateInput?(value: string): string | undefined | null }): Promise<string | undefined> {
    const answer = ui.next('input box');
    if (answer !== undefined && options?.validateInput) {
      const problem = options.validateInput(answer);
      if (problem) throw new Error(`input "${answer}" rejected: ${problem}`);
    }
    return answer;
  },
  createQuickPick<T extends { label: string; kind?: QuickPickItemKind }>() {
    const accept = new EventEmitter<void>();
    const hide = new EventEmitter<void>();
    const picker = {
      title: '',
      placeholder: '',
      matchOnDetail: false,
      busy: false,
      items: [] as T[],
      selectedItems: [] as T[],
      onDidAccept: accept.event,
      onDidHide: hide.event,
      show(): void {
        // Let the items load (the extension fills them asynchronously), then answer.
        setTimeout(() => {
          ui.quickPickItems.push(picker.items.map((item) => item.label));
          const answer = ui.next('quick pick');
          const chosen = answer === undefined ? undefined : picker.items.find((item) => item.kind !== QuickPickItemKind.Separator && item.label.includes(answer));
          if (!chosen) return hide.fire();
          picker.selectedItems = [chosen];
          accept.fire();
        }, 20);
      },
      dispose(): void {
        accept.dispose();
        hide.dispose();
      },
    };
    return picker;
  },
  async withProgress<R>(options: { title?: string }, task: (progress: { report(value: { message?: string }): void }) => Thenable<R>): Promise<R> {
    return task({ report: (value) => ui.shown.push({ kind: 'progress', message: value.message ?? '' }) });
  },
  createStatusBarItem() {
    return { text: '', tooltip: '', name: '', command: '', backgroundColor: undefined as ThemeColor | undefined, show() {}, hide() {}, dispose() {} };
  },
};

export const workspace = {
  workspaceFolders: [{ uri: Uri.file('/repo'), name: 'repo', index: 0 }] as Array<{ uri: Uri; name: string; index: number }> | undefined,
  getWorkspaceFolder(): undefined {
    return undefined;
  },
  getConfiguration(section: string) {
    return {
      get: <T>(key: string): T | undefined => settings.get(`${section}.${key}`) as T | undefined,
      update: async (key: string, value: unknown) => {
        settings.set(`${section}.${key}`, value);
      },
    };
  },
};

export interface StubThread {
  uri: Uri;
  range: Range | undefined;
  comments: vscode.Comment[];
  canReply?: boolean;
  label?: string;
  disposed: boolean;
  dispose(): void;
}

export const comments = {
  controllers: [] as Array<{ id: string; label: string; options?: unknown; commentingRangeProvider?: unknown; disposed: boolean; dispose(): void }>,
  createCommentController(id: string, label: string) {
    const controller = { id, label, options: undefined as unknown, commentingRangeProvider: undefined as unknown, disposed: false, dispose: () => (controller.disposed = true) };
    comments.controllers.push(controller);
    return controller;
  },
  /** A thread as VS Code creates it when the developer starts commenting on a line. */
  thread(uri: Uri, line: number): StubThread {
    const thread: StubThread = { uri, range: new Range(line, 0, line, 0), comments: [], disposed: false, dispose: () => (thread.disposed = true) };
    return thread;
  },
};

export const commands = {
  executed: [] as Array<{ command: string; args: unknown[] }>,
  async executeCommand(command: string, ...args: unknown[]): Promise<undefined> {
    commands.executed.push({ command, args });
    return undefined;
  },
};

export const env = {
  opened: [] as string[],
  async openExternal(uri: Uri): Promise<boolean> {
    env.opened.push(uri.toString());
    return true;
  },
};

/** A Memento backed by a map. */
export function memento(): vscode.Memento {
  const values = new Map<string, unknown>();
  return {
    keys: () => [...values.keys()],
    get: <T>(key: string, fallback?: T) => (values.has(key) ? (values.get(key) as T) : fallback),
    update: async (key: string, value: unknown) => {
      values.set(key, value);
    },
  } as vscode.Memento;
}

/** A LogOutputChannel that keeps its lines. */
export function logChannel(): vscode.LogOutputChannel & { lines: string[] } {
  const lines: string[] = [];
  const log = (level: string) => (message: string | Error) => lines.push(`${level} ${String(message)}`);
  return { lines, info: log('info'), warn: log('warn'), error: log('error'), debug: log('debug'), trace: log('trace') } as unknown as vscode.LogOutputChannel & { lines: string[] };
}
