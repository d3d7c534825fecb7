import type { z } from "zod";
import { type EnvSetting, envSettingAt } from "./config-env.js";
import { didYouMean } from "./key-suggestion.js";

/** The keys the config accepts at a path (an object's own keys), when the schema says. */
export type KnownKeys = (path: readonly PropertyKey[]) => readonly string[] | undefined;

function unknownKeysFix(issue: z.core.$ZodIssueUnrecognizedKeys, knownKeys: KnownKeys): string {
  const known = knownKeys(issue.path);
  const guess = known ? didYouMean(issue.keys, known) : undefined;
  const fix = guess ? `${guess} Fix its spelling or remove it` : "remove it or fix its spelling";
  return `${fix}; \`npm run -s hub -- config schema\` lists every key`;
}

/** A custom issue whose message already says what to do carries `params: { saysTheFix: true }`. */
function fixFor(issue: z.core.$ZodIssue, knownKeys: KnownKeys): string | undefined {
  if (issue.code === "custom" && issue.params?.saysTheFix === true) return undefined;
  if (issue.code === "invalid_key") return "rename the key";
  if (issue.code === "unrecognized_keys") return unknownKeysFix(issue, knownKeys);
  // An id typed as a number (allowFrom: [4242]) is a string in quotes ("4242").
  if (issue.code === "invalid_type" && issue.expected === "string" && /received number/.test(issue.message))
    return "set it to a string: put the number in quotes";
  if (issue.code === "invalid_type") return `set it to ${typeName(issue.expected)}`;
  if (issue.code === "invalid_format" && issue.format === "url")
    return "set it to a full URL, with its scheme (e.g. https://host/path)";
  return "correct the value";
}

// A type as a config's reader says it: "an object" for zod's object and record, "a whole number" for int.
function typeName(expected: string): string {
  if (expected === "object" || expected === "record") return "an object";
  if (expected === "int") return "a whole number";
  if (expected === "array") return "a list ([...])";
  return `a ${expected}`;
}

function fileLine(issue: z.core.$ZodIssue, knownKeys: KnownKeys): string {
  const keys =
    issue.code === "unrecognized_keys" ? ` (unknown key ${issue.keys.map((k) => `"${k}"`).join(", ")})` : "";
  const at = issue.path.length ? issue.path.map(String).join(".") : "(top level)";
  const fix = fixFor(issue, knownKeys);
  // An unknown key is said once: zod's "Unrecognized key" would name it again.
  if (issue.code === "unrecognized_keys") return `  - ${at}${keys}: ${fix}.`;
  return `  - ${at}${keys}: ${messageOf(issue)}${fix ? `; ${fix}` : ""}.`;
}

// A record's key that its key schema refuses: zod says only "Invalid key in record", the key schema says what a key must be.
function messageOf(issue: z.core.$ZodIssue): string {
  if (issue.code !== "invalid_key") return issue.message;
  const inner = issue.issues[0]?.message;
  return inner ? `the key ${inner}` : issue.message;
}

function bound(issue: z.core.$ZodIssueTooSmall | z.core.$ZodIssueTooBig): string {
  const small = issue.code === "too_small";
  const limit = small ? issue.minimum : issue.maximum;
  const word = issue.inclusive ? (small ? "of at least" : "of at most") : small ? "above" : "below";
  return `expects a number ${word} ${String(limit)}`;
}

// What the key expects, as the rest of a sentence that starts with the key.
function expects(issue: z.core.$ZodIssue): string {
  if (/^must\b/.test(issue.message)) return issue.message;
  if (issue.code === "invalid_type") return `expects ${typeName(issue.expected)}`;
  if (issue.code === "invalid_value")
    return `expects one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
  if ((issue.code === "too_small" || issue.code === "too_big") && issue.origin === "number")
    return bound(issue);
  return `is not valid (${issue.message})`;
}

function envLine(issue: z.core.$ZodIssue, setting: EnvSetting): string {
  const variable = setting.shown ? `${setting.variable}=${setting.value}` : setting.variable;
  const at = issue.path.map(String).join(".");
  return `  - ${variable}: ${at} ${expects(issue)}; correct ${setting.variable} or unset it.`;
}

/**
 * The message of a configuration that does not validate: each problem with
 * the key and how to fix it, under the file when the file set the key, or
 * naming the environment variable that set it (its value only when it is no
 * secret), so the file is not blamed for the environment. An unknown key
 * close to one of `knownKeys` (a typo) gets a "did you mean".
 */
export function describeConfigIssues(
  issues: ReadonlyArray<z.core.$ZodIssue>,
  source: string,
  envSettings: ReadonlyArray<EnvSetting>,
  knownKeys: KnownKeys = () => undefined,
): string {
  const fromEnv: string[] = [];
  const fromFile: string[] = [];
  for (const issue of issues) {
    const setting = envSettingAt(envSettings, issue.path);
    if (setting) fromEnv.push(envLine(issue, setting));
    else fromFile.push(fileLine(issue, knownKeys));
  }
  const parts: string[] = [];
  if (fromEnv.length)
    parts.push(`These environment variables hold values the hub cannot use:\n${fromEnv.join("\n")}`);
  if (fromFile.length) parts.push(`The configuration in ${source} is not valid:\n${fromFile.join("\n")}`);
  return parts.join("\n");
}
