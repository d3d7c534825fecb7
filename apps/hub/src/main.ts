#!/usr/bin/env node
import { inspect } from "node:util";
import { HubError } from "@hub/core";
import { CommanderError } from "commander";
import { secrets } from "./cli/context.js";
import { fileErrorSentence } from "./cli/file-errors.js";
import { createProgram } from "./cli/program.js";

const program = createProgram();
// A reader that stops early (`hub config schema | head`) closes the pipe: that ends the command's
// output, it is no error, so no EPIPE stack trace. `hub start` keeps the default (its log lines have
// a writer of their own; only its banner goes through process.stdout).
program.hook("preAction", (_program, action) => {
  if (action.name() === "start") return;
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(0);
    throw error;
  });
});
program.parseAsync(process.argv).catch((error) => {
  // Commander already printed its usage errors and help.
  if (error instanceof CommanderError) process.exit(error.exitCode);
  const sentence = error instanceof HubError ? error.message : fileErrorSentence(error);
  if (sentence !== undefined) {
    console.error(`hub: ${secrets.redact(sentence)}`);
  } else {
    console.error(secrets.redact(inspect(error)));
  }
  process.exit(1);
});
