import assert from "node:assert/strict";
import { test } from "node:test";
import { contextToMarkdown, modelFromHistory, splitEditorContext } from "../../src/lib/history";

const messages = [
  { role: "system", content: "sys" },
  { role: "user", content: "read a" },
  { role: "assistant", content: "", reasoning: "need the file", tool_calls: [{ id: "1", name: "file_read", arguments: '{"path":"a"}' }] },
  { role: "tool", content: "AAA", name: "file_read", tool_call_id: "1" },
  { role: "assistant", content: "It says AAA." },
];

test("a saved conversation becomes chat items", () => {
  const model = modelFromHistory(messages);
  assert.deepEqual(model.items.map((i) => i.kind), ["user", "reasoning", "tool", "assistant"]);
  const tool = model.items[2];
  assert.equal(tool.kind === "tool" && tool.result, "AAA");
  assert.equal(model.lastSeq, 0, "live events of the session must not be dropped as repeats");
});

test("garbage history gives an empty model", () => {
  assert.equal(modelFromHistory("nope").items.length, 0);
  assert.equal(modelFromHistory([null, 3]).items.length, 0);
});

test("the context document shows the system prompt, messages and tool calls", () => {
  const doc = contextToMarkdown({ systemPrompt: "You are ollie.", messages });
  assert.match(doc, /## System prompt\n\n```text\nYou are ollie\.\n```/);
  assert.match(doc, /## user\n\nread a/);
  assert.match(doc, /Tool call `file_read`:\n```json\n\{"path":"a"\}/);
  assert.match(doc, /## tool \(file_read\)\n\n```text\nAAA\n```/);
});

test("a saved prompt's editor context becomes its label", () => {
  const saved = "<editor-context>\nFile: marker.py (python)\nSelected text:\n```python\nX = 1\n```\n</editor-context>\n\nWhat does this do?";
  assert.deepEqual(splitEditorContext(saved), { prompt: "What does this do?", contextLabel: "marker.py" });
  assert.deepEqual(splitEditorContext("plain prompt"), { prompt: "plain prompt" });
  const model = modelFromHistory([{ role: "user", content: saved }]);
  assert.deepEqual(model.items[0], { kind: "user", id: 1, text: "What does this do?", contextLabel: "marker.py" });
});
