import assert from "node:assert/strict";
import { test } from "node:test";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { splitEditorContext } from "../../src/lib/promptContext";

// A hostile prompt is split in a worker: the old quadratic split took minutes at these sizes, so a bound far above
// the linear one's milliseconds fails it on any machine without timing anything that passes.
if (!isMainThread) parentPort?.postMessage(splitEditorContext(workerData as string));

function splitWithin(saved: string, ms: number): Promise<ReturnType<typeof splitEditorContext>> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(__filename, { workerData: saved });
    const timer = setTimeout(() => {
      void worker.terminate();
      reject(new Error(`splitting a ${saved.length}-character prompt took over ${ms} ms`));
    }, ms);
    worker.once("message", (split) => { clearTimeout(timer); void worker.terminate(); resolve(split); });
    worker.once("error", (error) => { clearTimeout(timer); reject(error); });
  });
}

const BLOCK = "<editor-context>\nFile: a.py (python)\nShowing lines 3-5:\n```python\nx\n```\n</editor-context>";

if (isMainThread) {
  test("a saved prompt's labels are the engine's (editorcontext.py `context_labels`)", () => {
    const selection = "<editor-context>\nFile: src/my (odd) file.py (python)\nLocation: lines 7-7\nSelected text:\n```python\nx = 1\n```\n</editor-context>";
    const resource = "<editor-context>\nMCP resource: note://readme (server t)\n```\nFile: no.py\n```\n</editor-context>";
    const plain = "<editor-context>\nFile: notes (v2).txt\n</editor-context>";
    assert.deepEqual(splitEditorContext([BLOCK, selection, resource, plain, "why?"].join("\n\n")),
      { prompt: "why?", contextLabels: ["a.py:3-5", "src/my (odd) file.py:7", "t: note://readme", "notes (v2).txt"] });
    assert.deepEqual(splitEditorContext(`${BLOCK}\n\nnow <editor-context>\nwhat`), { prompt: "now <editor-context>\nwhat", contextLabels: ["a.py:3-5"] },
      "an open no close follows is the user's words");
  });

  test("unclosed opens after a block are split in linear time", async () => {
    const tail = "<editor-context>\n".repeat(200_000);
    const split = await splitWithin(`${BLOCK}\n\n${tail}`, 30_000);
    assert.deepEqual(split, { prompt: tail, contextLabels: ["a.py:3-5"] });
  });

  test("a long run of blank lines before a block is split in linear time", async () => {
    const blank = "\n".repeat(400_000);
    const split = await splitWithin(`${blank}x\n${BLOCK}\n\nwhy?`, 30_000);
    assert.deepEqual(split, { prompt: `${blank}x\nwhy?`, contextLabels: ["a.py:3-5"] });
  });

  test("a `File:` header full of ` (` is labelled in linear time", async () => {
    const name = `a${" (".repeat(400_000)})x`;
    const split = await splitWithin(`<editor-context>\nFile: ${name}\n</editor-context>\n\nwhy?`, 30_000);
    assert.deepEqual(split, { prompt: "why?", contextLabels: [name] });
  });
}
