import type { ReplySink, ReplyStream, ReplyTarget } from "@hub/core";

/**
 * A reply an earlier attempt of a run queued whole (its last block's push ended it), as the run's settle
 * sees it: ended, with nothing more to push or end; its settlement is read from delivery. Its segment
 * count is not known here (0): the run's end takes it from the settlement.
 */
export function queuedReply(replies: ReplySink, replyId: string, target: ReplyTarget): ReplyStream {
  const queued = replies.open(replyId, target);
  return {
    replyId,
    ended: true,
    push: async () => {
      throw new Error(`reply ${replyId} was queued whole by an earlier attempt`);
    },
    end: async () => 0,
    settled: (signal) => queued.settled(signal),
  };
}
