// When the chat follows the stream: always after the user sends, otherwise only while at the bottom.

/** How close to the bottom (px) still counts as "at the bottom". */
export const BOTTOM_SLACK = 40;

/** Whether a scroll box is at (or within `slack` of) its bottom. */
export function isAtBottom(box: { scrollTop: number; scrollHeight: number; clientHeight: number }, slack = BOTTOM_SLACK): boolean {
  return box.scrollHeight - box.scrollTop - box.clientHeight <= slack;
}

/** What to do after new content arrived: scroll to the bottom, or leave the view and offer "jump to latest". */
export function afterUpdate(state: { following: boolean; userSent: boolean }): { scroll: boolean; showJump: boolean } {
  if (state.userSent || state.following) return { scroll: true, showJump: false };
  return { scroll: false, showJump: true };
}

/** Whether the view follows the stream after the user scrolled: only when they came back to the bottom. */
export function followingAfterScroll(atBottom: boolean): boolean {
  return atBottom;
}

/** Where a chat drawn anew scrolls to: the reader's place when it is the chat shown and she had left the bottom
 * (a redraw as a queued prompt starts pulled her down), else undefined: its bottom. */
export function redrawnScrollTop(box: { scrollTop: number; scrollHeight: number; clientHeight: number }, following: boolean, sameChat: boolean): number | undefined {
  return sameChat && box.clientHeight > 0 && (!following || !isAtBottom(box)) ? box.scrollTop : undefined;
}

/** Whether scrolling should load the earlier page of a resumed session: near the top, with messages left to load. */
export function wantsEarlier(box: { scrollTop: number }, earlier: number, slack = BOTTOM_SLACK): boolean {
  return earlier > 0 && box.scrollTop <= slack;
}

/** Where to scroll after content went in above the view, so what the user was reading stays where it was. */
export function keptScrollTop(before: { scrollTop: number; scrollHeight: number }, scrollHeightNow: number): number {
  return before.scrollTop + Math.max(0, scrollHeightNow - before.scrollHeight);
}

/** Whether a shown view with earlier messages left is too short to scroll: its next page is loaded without a scroll. */
export function needsEarlierToFill(box: { scrollHeight: number; clientHeight: number }, earlier: number): boolean {
  return earlier > 0 && box.clientHeight > 0 && box.scrollHeight <= box.clientHeight;
}
