// The chat input: sending, slash-command and context-chip completion, and the chips themselves.

import { ContextTrigger, composerAction, contextTrigger } from "../lib/composer";
import { SlashCommand, applySlashCompletion, isSlashCommand, slashCompletions, typedWhole } from "../lib/slash";
import { type Chip, type FromWebview, MAX_CHIPS, MAX_IMAGES, MAX_PROMPT_LENGTH, type PromptImage } from "../lib/webviewMessages";
import { el, icon } from "./dom";

interface Completion {
  label: string;
  args: string;
  description: string;
  destructive: boolean;
  accept(): void;
}

/** What the page keeps across its remaking: the prompt being typed, and the prompts sent the host has not taken yet. */
export interface SavedInput {
  draft: string;
  sent: string[];
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
  // Images pasted or dropped on the input: they go with the next prompt sent or queued (not injected).
  private images: (PromptImage & { id: string })[] = [];
  private readonly imageNote = document.getElementById("imageNote") as HTMLElement;
  /** The daemon's slash commands, sent with every reset. */
  commands: SlashCommand[] = [];
  running = false;

  constructor(
    private readonly post: (message: FromWebview) => void,
    private readonly onSend: () => void,
    private readonly saved: { get(): SavedInput; set(patch: Partial<SavedInput>): void },
  ) {
    const { draft, sent } = saved.get();
    this.input.value = [...sent, draft].filter((text) => text.trim()).join("\n");
    // Posted to an extension host that never took them (it hung, then restarted): back in the input, said.
    if (sent.length > 0) {
      saved.set({ draft: this.input.value, sent: [] });
      this.note(`Ollie restarted before taking ${sent.length === 1 ? "your prompt" : "your prompts"}: back in the input to send again.`);
    }
    this.input.addEventListener("keydown", (event) => this.keydown(event));
    this.input.addEventListener("input", () => {
      this.selected = 0;
      this.refresh();
    });
    (document.getElementById("composer") as HTMLFormElement).addEventListener("submit", (event) => {
      event.preventDefault();
      this.send(this.running ? "queue" : "submit");
    });
    this.input.addEventListener("paste", (event) => this.takeImages(event, event.clipboardData));
    this.input.addEventListener("dragover", (event) => event.preventDefault());
    this.input.addEventListener("drop", (event) => this.takeImages(event, event.dataTransfer));
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
    // Stop (or Inject) clicked keeps the focus until the turn ends and hides it: the input takes it then, not the page.
    if (!value && [this.stopButton, this.injectButton].includes(document.activeElement as HTMLButtonElement)) this.input.focus();
    document.body.classList.toggle("running", value);
    this.stopButton.hidden = !value;
    this.injectButton.hidden = !value;
    this.label();
  }

  // A slash command typed while a turn runs is sent at once, not queued: the button says so.
  private label(): void {
    this.sendButton.textContent = this.running && !isSlashCommand(this.input.value) ? "Queue" : "Send";
  }

  /** The host took the oldest prompt sent: it is no longer kept for a page made anew. */
  taken(): void {
    this.saved.set({ sent: this.saved.get().sent.slice(1) });
  }

  /** Add a chip the extension host made, after those already on the input (the same one twice is kept once). */
  addChip(chip: Chip): void {
    if (this.chips.some((c) => c.id === chip.id) || this.chips.length >= MAX_CHIPS) return;
    this.chips = [...this.chips, chip];
    this.renderChips();
    this.input.focus();
  }

  /** Put a prompt that was not sent back in the input, before what was typed since, with its chips and images. */
  putBack(text: string, chips: Chip[], images: PromptImage[], note?: string): void {
    this.input.value = this.input.value.trim() ? `${text}\n${this.input.value}` : text;
    this.chips = [...chips, ...this.chips.filter((c) => !chips.some((back) => back.id === c.id))].slice(0, MAX_CHIPS);
    this.images = [...images.map((image, n) => ({ ...image, id: `image-${Date.now()}-${n}` })), ...this.images].slice(0, MAX_IMAGES);
    this.renderChips();
    this.refresh();
    if (note) this.note(note);
    this.input.focus();
  }

  private removeChip(id: string): void {
    this.chips = this.chips.filter((c) => c.id !== id);
    this.images = this.images.filter((i) => i.id !== id);
    this.renderChips();
    this.input.focus();
  }

  /** The image files of a paste or a drop become image chips (text pastes and other files are left alone). */
  private takeImages(event: Event, transfer: DataTransfer | null): void {
    const files = Array.from(transfer?.files ?? []).filter((file) => file.type.startsWith("image/"));
    if (files.length === 0) return;
    event.preventDefault();
    for (const file of files) {
      if (this.images.length >= MAX_IMAGES) return this.note(`At most ${MAX_IMAGES} images go with one prompt.`);
      if (file.size > 5 * 1024 * 1024) {
        this.note(`${file.name || "The image"} is ${(file.size / 1048576).toFixed(1)} MiB: images are limited to 5 MiB.`);
        continue;
      }
      const reader = new FileReader();
      reader.onload = () => {
        const name = file.name && file.name !== "image.png" ? file.name : `pasted image ${this.images.length + 1}`;
        this.images = [...this.images, { id: `image-${Date.now()}-${Math.random()}`, name, data: String(reader.result) }];
        this.note("");
        this.renderChips();
      };
      reader.readAsDataURL(file);
    }
  }

  private note(text: string): void {
    this.imageNote.textContent = text;
    this.imageNote.hidden = text === "";
  }

  private renderChips(): void {
    const chip = (id: string, kind: string, iconName: string, label: string): HTMLElement => {
      const node = el("span", `chip ${kind}`);
      node.append(icon(iconName), el("span", "chip-label", label));
      const remove = el("button", "chip-remove");
      remove.type = "button";
      remove.setAttribute("aria-label", `Remove ${label} from the prompt`);
      remove.append(icon("close"));
      remove.addEventListener("click", () => this.removeChip(id));
      node.append(remove);
      return node;
    };
    this.chipBox.replaceChildren(
      ...this.chips.map((c) => chip(c.id, c.kind, { image: "file-media", file: "file", selection: "selection", resource: "plug" }[c.kind], c.label)),
      ...this.images.map((i) => chip(i.id, "image", "file-media", i.name)),
    );
  }

  private send(kind: "submit" | "queue" | "inject"): void {
    const text = this.input.value;
    if (!text.trim()) {
      // Enter on an empty prompt sends the prompts a Stop (or a reload) held, if any.
      if (kind === "submit" && this.chips.length === 0 && this.images.length === 0) this.post({ type: "runHeld" });
      return;
    }
    // Injected text joins a tool result: no picture goes there. Queued, a prompt keeps its images until it runs.
    if ((this.images.length > 0 || this.chips.some((c) => c.kind === "image")) && kind === "inject") {
      return this.note("Images do not go into a running turn: queue the prompt (Enter) to send them once it ends.");
    }
    // The host refuses it: said now, the text kept to shorten (it vanished from the input).
    if (text.length > MAX_PROMPT_LENGTH) {
      return this.note(`The prompt is ${text.length.toLocaleString("en")} characters; at most ${MAX_PROMPT_LENGTH.toLocaleString("en")} go in one: shorten it, or add a file (@) instead.`);
    }
    // The chips go with the prompt however it is sent: a queued prompt runs with its context too.
    const message: FromWebview = this.chips.length > 0 ? { type: kind, text, chips: this.chips.map((c) => c.id) } : { type: kind, text };
    if (this.images.length > 0 && (message.type === "submit" || message.type === "queue")) message.images = this.images.map(({ name, data }) => ({ name, data }));
    this.post(message);
    this.saved.set({ sent: [...this.saved.get().sent, text] });
    this.images = [];
    this.note("");
    this.chips = [];
    this.renderChips();
    this.input.value = "";
    this.refresh();
    this.onSend();
  }

  private keydown(event: KeyboardEvent): void {
    const chosen = this.completions[this.selected];
    const action = composerAction(event, {
      running: this.running,
      completing: this.completions.length > 0 && !this.list.hidden,
      typedWhole: chosen !== undefined && typedWhole(this.input.value, { name: chosen.label, args: chosen.args }),
      empty: this.input.value === "" && this.chips.length === 0 && this.images.length === 0,
    });
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
      case "stop":
        this.post({ type: "interrupt" });
        break;
      case "takeBack":
        this.post({ type: "takeBack" });
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
    this.saved.set({ draft: this.input.value });
    this.label();
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
