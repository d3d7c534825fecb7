/** The visible text of a mrkdwn message and whether its markup is well formed, as Slack would show it. */
export interface MrkdwnView {
  text: string;
  wellFormed: boolean;
  /** Why it is not well formed. */
  problem?: string;
}

const ENTITY = /^&(amp|lt|gt);/;
const ANGLE = /^<([^<>|]+)(?:\|([^<>]*))?>/;

/**
 * Reads mrkdwn like Slack: `&amp;`/`&lt;`/`&gt;` are the only entities, every `<...>` is a link,
 * mention or command, and fenced code blocks are balanced. Stricter than Slack in one way: a bare
 * `&` or `<` counts as malformed (Slack asks for them escaped), so a renderer that forgets is caught.
 * The visible text keeps emphasis characters and drops fences; links show their label.
 */
export function readMrkdwn(mrkdwn: string): MrkdwnView {
  let text = "";
  let i = 0;
  const bad = (problem: string): MrkdwnView => ({ text, wellFormed: false, problem });
  while (i < mrkdwn.length) {
    const rest = mrkdwn.slice(i);
    const c = mrkdwn[i];
    if (c === "&") {
      const m = ENTITY.exec(rest);
      if (!m) return bad(`unescaped "&" at ${i}`);
      text += m[1] === "amp" ? "&" : m[1] === "lt" ? "<" : ">";
      i += m[0].length;
    } else if (c === "<") {
      const m = ANGLE.exec(rest);
      if (!m) return bad(`unescaped "<" at ${i}`);
      const target = m[1] ?? "";
      if (!/^(https?:\/\/|mailto:|@[UW]|#C|!)/.test(target)) return bad(`unknown link target "${target}"`);
      text += m[2] ?? target;
      i += m[0].length;
    } else if (c === ">" && !(i === 0 || mrkdwn[i - 1] === "\n")) {
      return bad(`unescaped ">" at ${i}`);
    } else {
      text += c;
      i += 1;
    }
  }
  const fences = (mrkdwn.match(/```/g) ?? []).length;
  if (fences % 2 !== 0) return bad("unbalanced ``` fence");
  return { text: text.replace(/```\n?/g, ""), wellFormed: true };
}
