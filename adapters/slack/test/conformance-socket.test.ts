import { describeAdapterConformance } from "@hub/conformance";
import { slackHarness } from "./harness.js";

describeAdapterConformance("slack (Socket Mode)", () => slackHarness({ mode: "socket" }));
