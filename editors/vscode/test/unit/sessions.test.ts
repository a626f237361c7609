import assert from "node:assert/strict";
import { test } from "node:test";
import { keyEnvironment, KEY_BACKENDS, keyVariables, secretKey } from "../../src/lib/apiKeys";
import { UNARCHIVE_AND_RESUME, historyEntries, listSessions, relativeTime, sessionRefusal, unarchiveRefusal } from "../../src/lib/history";

const NOW = Date.parse("2026-11-30T12:00:00Z");

test("relative times read like a person would say them", () => {
  assert.equal(relativeTime("2026-11-30T11:59:40Z", NOW), "seconds ago");
  assert.equal(relativeTime("2026-11-30T11:35:00Z", NOW), "25 min ago");
  assert.equal(relativeTime("2026-11-30T10:00:00Z", NOW), "2 h ago");
  assert.equal(relativeTime("2026-11-29T08:00:00Z", NOW), "yesterday");
  assert.equal(relativeTime("2026-11-25T12:00:00Z", NOW), "5 days ago");
  assert.equal(relativeTime("2026-01-02T12:00:00Z", NOW), "2026-01-02");
  assert.equal(relativeTime(NOW + 5000, NOW), "seconds ago", "a clock a little ahead is not the future");
  assert.equal(relativeTime(null, NOW), "");
  assert.equal(relativeTime("not a date", NOW), "");
});

test("history entries: title (or Untitled), current, when, turns, agent, archived; empty unnamed sessions left out", () => {
  const entries = historyEntries(
    [
      { id: "1-a", title: "Fix the parser", agent: "default", lastActive: "2026-11-30T10:00:00Z", turns: 2 },
      { id: "2-b", title: "  ", agent: "default", createdAt: "2026-11-30T11:59:00Z", archived: true, turns: 1 },
      { id: "3-c", title: "", createdAt: "2026-11-30T11:00:00Z", lastTurnResult: null },
      { id: "4-d", title: "The migration", agent: "default", lastActive: "2026-11-30T10:00:00Z", owner: "alice", team: "backend", turns: "x" },
      { id: "5-e", title: "Fix the parser", lastActive: "2026-11-30T10:00:00Z", turns: 0 },
      { title: "no id" },
      "junk",
    ],
    "2-b",
    NOW,
  );
  assert.deepEqual(entries, [
    { id: "1-a", title: "Fix the parser", label: "Fix the parser", description: "2 h ago · 2 turns · default", current: false, archived: false },
    { id: "2-b", title: "", label: "Untitled session", description: "current · 1 min ago · 1 turn · default · archived", current: true, archived: true },
    { id: "4-d", title: "The migration", label: "The migration", description: "team backend · alice · 2 h ago · default", current: false, archived: false },
    { id: "5-e", title: "Fix the parser", label: "Fix the parser", description: "2 h ago · 0 turns", current: false, archived: false },
  ]);
  assert.deepEqual(historyEntries(undefined, undefined, NOW), []);
  // A rewind of every turn left it untitled with no turn: listed while that rewind can be undone, said as such.
  const [rewound] = historyEntries([{ id: "7-g", title: "", turns: 0, rewindUndo: true }], undefined, NOW);
  assert.equal(rewound.label, "Rewound session (/rewind undo in its chat puts it back)");
  assert.deepEqual(historyEntries([{ id: "7-g", title: "", turns: 0, rewindUndo: false }], undefined, NOW), []);
  // A teammate's shared session is titled by her: a line break and a U+202E in it are drawn escaped.
  const [shared] = historyEntries([{ id: "6-f", title: "Fix\n\u202eparser", lastActive: "2026-11-30T10:00:00Z" }], undefined, NOW);
  assert.equal(shared.label, "Fix\\x0a\\u202eparser");
  assert.equal(shared.title, "Fix\n\u202eparser", "a rename starts from the title itself");
});

test("a session live on another machine says where; loading it (-32007) or changing a teammate's (-32008) shows the daemon's reason", () => {
  const entries = historyEntries(
    [
      { id: "1-a", title: "Deploy fix", agent: "default", lastActive: "2026-11-30T10:00:00Z", live: false, liveOn: "buildbox (pid 4242)" },
      { id: "2-b", title: "Local", agent: "default", lastActive: "2026-11-30T10:00:00Z", live: true, liveOn: null },
    ],
    undefined,
    NOW,
  );
  assert.deepEqual(entries[0], {
    id: "1-a",
    title: "Deploy fix",
    label: "Deploy fix",
    description: "live on buildbox (pid 4242) · 2 h ago · default",
    current: false,
    archived: false,
    liveOn: "buildbox (pid 4242)",
  });
  assert.equal(entries[1].description, "2 h ago · default", "a session live here is not 'live elsewhere'");
  const live = "session is live elsewhere: session 1-a is live on buildbox (pid 4242, user ann) since 2026-11-30T10:00:00Z: it can be loaded once it closes";
  assert.equal(sessionRefusal({ code: -32007, message: live }), `Ollie: ${live}`);
  const forbidden = "forbidden: session 1-a is shared with team 'core' to read and resume: only its owner (ann) may rename, archive or share it";
  assert.equal(sessionRefusal({ code: -32008, message: forbidden }), `Ollie: ${forbidden}`);
  assert.match(sessionRefusal({ code: -32002, message: "session is archived: 1-a" }) ?? "", /archived: an archived session cannot be resumed/);
  assert.equal(sessionRefusal({ code: -32001, message: "unknown session" }), undefined, "other errors stay errors");
  assert.equal(sessionRefusal(new Error("boom")), undefined);
  assert.equal(sessionRefusal(null), undefined);
});

test("an archived session is listed as such, offers to be unarchived, and a refusal says why", () => {
  const [entry] = historyEntries([{ id: "1-a", title: "Old work", lastActive: "2026-11-30T10:00:00Z", archived: true }], undefined, NOW);
  assert.equal(entry.archived, true);
  assert.match(entry.description, /archived$/);
  assert.equal(UNARCHIVE_AND_RESUME, "Unarchive and resume");
  // A daemon older than ollie/session/unarchive answers "method not found".
  assert.match(unarchiveRefusal({ code: -32601, message: "Method Not Found: ollie/session/unarchive" }, entry.label) ?? "", /"Old work" is archived, and this ollie daemon cannot unarchive/);
  const second = "Invalid params: session: session 1-a cannot be unarchived: its user already has an active main session; archive that one first";
  assert.equal(unarchiveRefusal({ code: -32602, message: second }, entry.label), "Ollie: session 1-a cannot be unarchived: its user already has an active main session; archive that one first");
  assert.match(unarchiveRefusal({ code: -32008, message: "forbidden: shared with team 'core'" }, entry.label) ?? "", /^Ollie: forbidden/);
  assert.equal(unarchiveRefusal(new Error("boom"), entry.label), undefined, "other errors stay errors");
});

test("stored API keys become the daemon's environment; openai and openrouter share a variable", () => {
  assert.deepEqual(keyVariables(), ["OLLIE_OPENAI_KEY", "OLLIE_ANTHROPIC_KEY"]);
  assert.equal(KEY_BACKENDS.find((b) => b.backend === "openrouter")?.env, "OLLIE_OPENAI_KEY");
  assert.equal(secretKey("OLLIE_ANTHROPIC_KEY"), "ollie.env.OLLIE_ANTHROPIC_KEY");
  const env = keyEnvironment(new Map([["OLLIE_OPENAI_KEY", " sk-1 "], ["OLLIE_ANTHROPIC_KEY", ""], ["OTHER", "x"]]));
  assert.deepEqual(env, { OLLIE_OPENAI_KEY: "sk-1" });
});

test("the session list follows the daemon's cursors to the end, at most `max` sessions, never the same page twice", async () => {
  const all = Array.from({ length: 250 }, (_, n) => ({ id: `s${n}` }));
  const asked: unknown[] = [];
  const daemon = async (params: { limit: number; cursor?: string }) => {
    asked.push(params);
    const from = params.cursor ? Number(params.cursor) : 0;
    const end = Math.min(all.length, from + params.limit);
    return { sessions: all.slice(from, end), nextCursor: end < all.length ? String(end) : null };
  };
  assert.deepEqual(await listSessions(daemon), all);
  assert.deepEqual(asked, [{ limit: 100 }, { limit: 100, cursor: "100" }, { limit: 100, cursor: "200" }]);
  assert.deepEqual(await listSessions(daemon, 150), all.slice(0, 150));
  // A page of only records left out (empty) with a cursor goes on; a cursor given twice ends the listing.
  const pages: Record<string, unknown> = { "": { sessions: [], nextCursor: "a" }, a: { sessions: [{ id: "x" }], nextCursor: "a" } };
  assert.deepEqual(await listSessions(async (p) => pages[p.cursor ?? ""]), [{ id: "x" }]);
});
