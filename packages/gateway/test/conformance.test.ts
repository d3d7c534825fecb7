import { describeAdapterConformance } from "@hub/conformance";
import { webchatHarness } from "./webchat-harness.js";

describeAdapterConformance("webchat", () => webchatHarness());
