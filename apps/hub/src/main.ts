#!/usr/bin/env node
import { inspect } from "node:util";
import { HubError } from "@hub/core";
import { CommanderError } from "commander";
import { secrets } from "./cli/context.js";
import { createProgram } from "./cli/program.js";

createProgram()
  .parseAsync(process.argv)
  .catch((error) => {
    // Commander already printed its usage errors and help.
    if (error instanceof CommanderError) process.exit(error.exitCode);
    if (error instanceof HubError) {
      console.error(`hub: ${secrets.redact(error.message)}`);
    } else {
      console.error(secrets.redact(inspect(error)));
    }
    process.exit(1);
  });
