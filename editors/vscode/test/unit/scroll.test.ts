import assert from "node:assert/strict";
import { test } from "node:test";
import { afterUpdate, followingAfterScroll, isAtBottom, keptScrollTop, needsEarlierToFill, redrawnScrollTop, wantsEarlier } from "../../src/lib/scroll";

test("at the bottom means within the slack of it", () => {
  assert.ok(isAtBottom({ scrollTop: 500, scrollHeight: 1000, clientHeight: 500 }));
  assert.ok(isAtBottom({ scrollTop: 470, scrollHeight: 1000, clientHeight: 500 }));
  assert.ok(!isAtBottom({ scrollTop: 0, scrollHeight: 1000, clientHeight: 500 }));
  assert.ok(isAtBottom({ scrollTop: 0, scrollHeight: 300, clientHeight: 500 }), "content shorter than the view");
});

test("a prompt the user sent is always scrolled to; the stream is followed only at the bottom", () => {
  assert.deepEqual(afterUpdate({ following: false, userSent: true }), { scroll: true, showJump: false });
  assert.deepEqual(afterUpdate({ following: true, userSent: false }), { scroll: true, showJump: false });
  assert.deepEqual(afterUpdate({ following: false, userSent: false }), { scroll: false, showJump: true });
  assert.equal(followingAfterScroll(true), true);
  assert.equal(followingAfterScroll(false), false);
});

test("the earlier page loads near the top only while there is one; prepending keeps the reader's place", () => {
  assert.ok(wantsEarlier({ scrollTop: 0 }, 12));
  assert.ok(!wantsEarlier({ scrollTop: 0 }, 0));
  assert.ok(!wantsEarlier({ scrollTop: 300 }, 12));
  assert.equal(keptScrollTop({ scrollTop: 10, scrollHeight: 1000 }, 1600), 610);
  assert.equal(keptScrollTop({ scrollTop: 10, scrollHeight: 1000 }, 900), 10);
});

test("a resumed page too short to scroll loads the one before at once; a hidden view or a full one does not", () => {
  assert.ok(needsEarlierToFill({ scrollHeight: 300, clientHeight: 600 }, 40));
  assert.ok(!needsEarlierToFill({ scrollHeight: 300, clientHeight: 600 }, 0), "nothing earlier");
  assert.ok(!needsEarlierToFill({ scrollHeight: 900, clientHeight: 600 }, 40), "the user can scroll up");
  assert.ok(!needsEarlierToFill({ scrollHeight: 0, clientHeight: 0 }, 40), "a hidden view would load every page");
});

test("a redraw of the chat shown keeps the place of a reader who scrolled up; at the bottom, or another chat, goes to the bottom", () => {
  const reading = { scrollTop: 200, scrollHeight: 2000, clientHeight: 500 };
  assert.equal(redrawnScrollTop(reading, false, true), 200);
  assert.equal(redrawnScrollTop(reading, true, true), 200, "scrolled up, her scroll event not in yet");
  assert.equal(redrawnScrollTop({ scrollTop: 1500, scrollHeight: 2000, clientHeight: 500 }, true, true), undefined);
  assert.equal(redrawnScrollTop(reading, false, false), undefined, "another session starts at its bottom");
  assert.equal(redrawnScrollTop({ scrollTop: 0, scrollHeight: 0, clientHeight: 0 }, false, true), undefined, "a hidden view");
});
