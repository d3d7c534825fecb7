import { describeAdapterConformance } from "../../../test/conformance/adapter-conformance.js";
import { telegramHarness } from "./harness.js";

describeAdapterConformance("telegram", () => telegramHarness());
