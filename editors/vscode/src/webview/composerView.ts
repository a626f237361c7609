// The chat input: sending, slash-command and context-chip completion, and the chips themselves.

import { ContextTrigger, composerAction, contextTrigger } from "../lib/composer";
import { SlashCommand, applySlashCompletion, slashCompletions } from "../lib/slash";
import { type Chip, type FromWebview, MAX_CHIPS } from "../lib/webviewMessages";
import { el, icon } from "./dom";

interface Completion {
  label: string;
  args: string;
  description: string;
  destructive: boolean;
  accept(): void;
}

/** Wires the input, its buttons and the completion list; `post` sends to the extension host. */
export class Composer {
  private readonly input = document.getElementById("input") as HTMLTextAreaElement;
  private readonly list = document.getElementById("slash") as HTMLUListElement;
  private readonly chipBox = document.getElementById("chips") as HTMLElement;
  private readonly sendButton = document.getElementById("send") as HTMLButtonElement;
  private readonly injectButton = document.getElementById("inject") as HTMLButtonElement;
  private readonly stopButton = document.getElementById("stop") as HTMLButtonElement;
  private completions: Completion[] = [];
  private selected = 0;
  // The prompt's context chips, in the order added; each is removable, all go with the next prompt sent.
  private chips: Chip[] = [];
  /** The daemon's slash commands, sent with every reset. */
  commands: SlashCommand[] = [];
  running = false;

  constructor(
    private readonly post: (message: FromWebview) => void,
    private readonly onSend: () => void,
    private readonly draft: { get(): string; set(text: string): void },
  ) {
    this.input.value = draft.get();
    this.input.addEventListener("keydown", (event) => this.keydown(event));
    this.input.addEventListener("input", () => {
      this.selected = 0;
      this.refresh();
    });
    (document.getElementById("composer") as HTMLFormElement).addEventListener("submit", (event) => {
      event.preventDefault();
      this.send(this.running ? "queue" : "submit");
    });
    this.injectButton.addEventListener("click", () => this.send("inject"));
    this.stopButton.addEventListener("click", () => this.post({ type: "interrupt" }));
    (document.getElementById("addFile") as HTMLButtonElement).addEventListener("click", () => this.post({ type: "pickFile" }));
    (document.getElementById("addSelection") as HTMLButtonElement).addEventListener("click", () => this.post({ type: "addSelection" }));
  }

  focus(): void {
    this.input.focus();
  }

  setRunning(value: boolean): void {
    this.running = value;
    document.body.classList.toggle("running", value);
    this.stopButton.hidden = !value;
    this.injectButton.hidden = !value;
    this.sendButton.textContent = value ? "Queue" : "Send";
  }

  /** Add a chip the extension host made, after those already on the input (the same one twice is kept once). */
  addChip(chip: Chip): void {
    if (this.chips.some((c) => c.id === chip.id) || this.chips.length >= MAX_CHIPS) return;
    this.chips = [...this.chips, chip];
    this.renderChips();
    this.input.focus();
  }

  private removeChip(id: string): void {
    this.chips = this.chips.filter((c) => c.id !== id);
    this.renderChips();
    this.input.focus();
  }

  private renderChips(): void {
    this.chipBox.replaceChildren(
      ...this.chips.map((chip) => {
        const node = el("span", `chip ${chip.kind}`);
        node.append(icon(chip.kind === "file" ? "file" : "selection"), el("span", "chip-label", chip.label));
        const remove = el("button", "chip-remove");
        remove.type = "button";
        remove.setAttribute("aria-label", `Remove ${chip.label} from the prompt`);
        remove.append(icon("close"));
        remove.addEventListener("click", () => this.removeChip(chip.id));
        node.append(remove);
        return node;
      }),
    );
  }

  private send(kind: "submit" | "queue" | "inject"): void {
    const text = this.input.value;
    if (!text.trim()) return;
    // The chips go with the prompt however it is sent: a queued prompt runs with its context too.
    this.post(this.chips.length > 0 ? { type: kind, text, chips: this.chips.map((c) => c.id) } : { type: kind, text });
    this.chips = [];
    this.renderChips();
    this.input.value = "";
    this.refresh();
    this.onSend();
  }

  private keydown(event: KeyboardEvent): void {
    const action = composerAction(event, { running: this.running, completing: this.completions.length > 0 && !this.list.hidden });
    if (action === "none" || action === "newline") return;
    event.preventDefault();
    switch (action) {
      case "nextCompletion":
        this.selected = (this.selected + 1) % this.completions.length;
        this.render();
        break;
      case "previousCompletion":
        this.selected = (this.selected + this.completions.length - 1) % this.completions.length;
        this.render();
        break;
      case "closeCompletion":
        this.list.hidden = true;
        break;
      case "complete":
        this.completions[this.selected]?.accept();
        break;
      default:
        this.send(action);
    }
  }

  private trigger(trigger: ContextTrigger): Completion {
    const file = trigger.kind === "file";
    return {
      label: file ? "@file" : "#selection",
      args: "",
      description: file ? "add a workspace file to the prompt…" : "add the editor's selection to the prompt",
      destructive: false,
      accept: () => {
        this.input.value = this.input.value.slice(0, trigger.start) + this.input.value.slice(trigger.end);
        this.close();
        this.post({ type: file ? "pickFile" : "addSelection" });
      },
    };
  }

  private refresh(): void {
    this.draft.set(this.input.value);
    const trigger = contextTrigger(this.input.value, this.input.selectionStart ?? this.input.value.length);
    if (trigger) {
      this.completions = [this.trigger(trigger)];
    } else {
      this.completions = slashCompletions(this.input.value, this.commands).map((command) => ({
        label: command.name,
        args: command.args,
        description: command.description,
        destructive: command.destructive,
        accept: () => {
          this.input.value = applySlashCompletion(command);
          this.close();
        },
      }));
    }
    this.selected = Math.min(this.selected, Math.max(this.completions.length - 1, 0));
    this.render();
  }

  private close(): void {
    this.completions = [];
    this.list.hidden = true;
    this.input.focus();
  }

  private render(): void {
    this.list.replaceChildren(
      ...this.completions.map((completion, index) => {
        const row = el("li", index === this.selected ? "selected" : undefined);
        row.id = `completion-${index}`;
        row.setAttribute("role", "option");
        row.setAttribute("aria-selected", String(index === this.selected));
        const name = el("span", "slash-name", completion.label);
        if (completion.args) name.append(el("span", "slash-args", ` ${completion.args}`));
        row.append(name);
        if (completion.destructive) {
          const mark = el("span", "slash-destructive");
          mark.append(icon("warning"), document.createTextNode(" destructive"));
          mark.title = "Loses or stops what the session holds";
          row.append(mark);
        }
        row.append(el("span", "slash-description", completion.description));
        row.addEventListener("mousedown", (event) => {
          event.preventDefault();
          completion.accept();
        });
        return row;
      }),
    );
    this.list.hidden = this.completions.length === 0;
    if (this.list.hidden) this.input.removeAttribute("aria-activedescendant");
    else this.input.setAttribute("aria-activedescendant", `completion-${this.selected}`);
    this.list.querySelector(".selected")?.scrollIntoView({ block: "nearest" });
  }
}
