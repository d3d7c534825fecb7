import { describeAdapterConformance } from "@hub/conformance";
import { discordHarness } from "./harness.js";

describeAdapterConformance("discord", () => discordHarness());
