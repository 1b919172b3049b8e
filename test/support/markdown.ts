/**
 * Markdown as a renderer reads it, for the docs test: markdown-it (CommonMark) parses, and
 * github-slugger makes heading anchors the way GitHub does. Three questions: which code fences
 * are not closed by a line that CommonMark accepts as their end (a closing fence has nothing after
 * its backticks, so "``` text" reopens the block and everything below renders as code); which
 * links a document holds; which anchors its headings give.
 */
import GithubSlugger from "github-slugger";
import MarkdownIt from "markdown-it";

/** A token of markdown-it's parse. */
type Token = MarkdownIt.Token;

const parser = new MarkdownIt({ html: true });

/** A fence's marker run at the start of a line, and what follows it (CommonMark 4.5). */
const FENCE_LINE = /^ {0,3}(`{3,}|~{3,})(.*)$/;

/**
 * Code fences of `markdown` that are not closed: each as `line N: ...` (1-based, the opening
 * line). A fence runs to its closing line or, if none, to the end of the document; markdown-it
 * gives its line span, and the last line of that span must be a run of the opening's character
 * at least as long, with nothing but spaces after it.
 */
export function unclosedFences(markdown: string): string[] {
  const lines = markdown.split("\n");
  const problems: string[] = [];
  for (const token of parser.parse(markdown, {})) {
    if (token.type !== "fence" || token.map === null) continue;
    const [start, end] = token.map;
    const opening = FENCE_LINE.exec(lines[start]!)?.[1] ?? token.markup;
    const closing = end - 1 > start ? FENCE_LINE.exec(lines[end - 1]!) : null;
    const closes = closing !== null && closing[1]![0] === opening[0] && closing[1]!.length >= opening.length && closing[2]!.trim() === "";
    if (!closes)
      problems.push(
        `line ${start + 1}: the fence opened here (${opening}) is not closed before line ${end} (a closing fence has nothing after it)`,
      );
  }
  return problems;
}

/** The visible text of an inline token (what GitHub slugs): text and code, without markup. */
function plainText(inline: Token): string {
  return (inline.children ?? [])
    .filter((t) => t.type === "text" || t.type === "code_inline")
    .map((t) => t.content)
    .join("");
}

/** The anchors the headings of `markdown` get on GitHub, duplicates numbered as GitHub numbers them. */
export function headingAnchors(markdown: string): Set<string> {
  const slugger = new GithubSlugger();
  const tokens = parser.parse(markdown, {});
  const anchors = new Set<string>();
  tokens.forEach((token, i) => {
    if (token.type === "heading_open") anchors.add(slugger.slug(plainText(tokens[i + 1]!)));
  });
  return anchors;
}

/** Every link target in `markdown` (inline links, references and autolinks), in order. */
export function linkTargets(markdown: string): string[] {
  const targets: string[] = [];
  const visit = (tokens: Token[]) => {
    for (const token of tokens) {
      if (token.type === "link_open") targets.push(String(token.attrGet("href") ?? ""));
      if (token.children) visit(token.children);
    }
  };
  visit(parser.parse(markdown, {}));
  return targets;
}
