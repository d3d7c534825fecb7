/**
 * Role markers a user could type to make their text look like it came from the
 * system or the assistant. Matched at the start of a line (of its look-alike
 * skeleton, see `roleMarkerSkeleton`), ignoring case, leading whitespace and
 * markdown decoration, also between the word and its colon (`**System**:`).
 */
const ROLE_MARKER =
  /^([\s>*_`#~-]*)(\[\s*(system|assistant|developer|tool)\s*\]|<\s*\/?\s*(system|assistant|developer|tool)\s*>|(system|assistant|developer)[\s*_`~]*:)/i;

// Letters from other scripts that look like the Latin ones of the role words (Cyrillic, Greek).
const LOOK_ALIKES: Readonly<Record<string, string>> = {
  а: "a",
  е: "e",
  о: "o",
  р: "p",
  с: "c",
  у: "y",
  х: "x",
  ѕ: "s",
  і: "i",
  ј: "j",
  ӏ: "l",
  һ: "h",
  ԁ: "d",
  ԛ: "q",
  ԝ: "w",
  ѵ: "v",
  т: "t",
  м: "m",
  н: "h",
  к: "k",
  в: "b",
  А: "A",
  В: "B",
  Е: "E",
  К: "K",
  М: "M",
  Н: "H",
  О: "O",
  Р: "P",
  С: "C",
  Т: "T",
  У: "Y",
  Х: "X",
  Ѕ: "S",
  І: "I",
  Ј: "J",
  Ԁ: "D",
  Ӏ: "I",
  Ѵ: "V",
  α: "a",
  ε: "e",
  ι: "i",
  κ: "k",
  ν: "v",
  ο: "o",
  ρ: "p",
  τ: "t",
  υ: "u",
  χ: "x",
  ѡ: "w",
  Α: "A",
  Β: "B",
  Ε: "E",
  Ζ: "Z",
  Η: "H",
  Ι: "I",
  Κ: "K",
  Μ: "M",
  Ν: "N",
  Ο: "O",
  Ρ: "P",
  Τ: "T",
  Υ: "Y",
  Χ: "X",
};

// Zero-width and other invisible format characters (ZWSP, ZWJ, word joiner, BOM, bidi controls, soft hyphen...).
const FORMAT_CHARS = /\p{Cf}|\u034f|\u115f|\u1160|\u3164|\uffa0/gu;

/**
 * What a line looks like once compatibility forms are folded (NFKC: full-width
 * and mathematical letters become plain ones) and invisible format characters
 * are removed. Used wherever text is checked for something it must not contain.
 */
export function foldForMatching(text: string): string {
  return text.normalize("NFKC").replace(FORMAT_CHARS, "");
}

/** `foldForMatching` plus Cyrillic and Greek look-alike letters mapped to Latin, one character each. */
function roleMarkerSkeleton(folded: string): string {
  return Array.from(folded, (ch) => LOOK_ALIKES[ch] ?? ch).join("");
}

/**
 * Neutralizes spoofed role markers in user text: a line that starts with
 * `System:`, `[System]`, `[Assistant]`, `<system>` and the like, also written
 * with zero-width characters, markdown decoration or look-alike letters, is
 * folded (see `foldForMatching`) and prefixed so it reads as quoted text and
 * can never pose as ours. Other lines are left exactly as written.
 */
export function neutralizeRoleMarkers(text: string, label = "user wrote"): string {
  return text
    .split("\n")
    .map((line) => {
      const folded = foldForMatching(line);
      const match = ROLE_MARKER.exec(roleMarkerSkeleton(folded));
      if (!match) return line;
      const lead = match[1]?.length ?? 0;
      // Mapping look-alikes is one character for one, so positions in the skeleton are positions in `folded`.
      const chars = Array.from(folded);
      return `${chars.slice(0, lead).join("")}(${label}) ${chars.slice(lead).join("")}`;
    })
    .join("\n");
}

/**
 * Normalizes line endings to `\n`, strips NUL and other C0 control characters except tab and newline,
 * and replaces a lone UTF-16 surrogate (half an emoji, which a platform's JSON may carry as an escape)
 * with U+FFFD: such a string is not valid UTF-8, and JSON decoders past the edge (Lua's cjson) reject it.
 */
export function normalizeText(text: string): string {
  return (
    text
      .replace(/\r\n?/g, "\n")
      // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
      .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, "")
      .replace(LONE_SURROGATE, "\ufffd")
  );
}

/**
 * True when a text shows nothing: only whitespace and invisible characters (zero-width spaces and joiners,
 * bidi marks, soft hyphens: Unicode's format class; and the Hangul and Braille fillers that render blank).
 */
export function isBlankText(text: string): boolean {
  return BLANK.test(text);
}

const BLANK = /^[\s\p{Cf}\u115f\u1160\u2800\u3164\uffa0]*$/u;

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
