/** Why a run was stopped from outside: the user, a newer claim on its session, or its timeout. */
export class RunStopError extends Error {
  constructor(readonly status: "aborted" | "superseded" | "timed_out") {
    super(`run ${status.replace("_", " ")}`);
    this.name = "RunStopError";
  }
}

/** This process lost the session's lane lease: another process has the session and will resume the run. */
export class LeaseLostError extends Error {
  constructor() {
    super("the session lane lease was lost");
    this.name = "LeaseLostError";
  }
}
