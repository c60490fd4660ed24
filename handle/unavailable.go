package handle

import "errors"

// ErrUnavailable: the store could not answer for now — a replicated store
// electing a leader, a cluster without quorum, servers that cannot be
// reached — and did not within the time its retries allow. Nothing is
// known to be wrong with the session; the same call may succeed later.
//
// It is never a verdict on the log (eventlog.ErrCorrupt) or on who holds it
// (ErrLocked). When it comes from a Flush whose outcome could not be
// learnt, the handle is poisoned (a *PoisonedError wrapping it): reopen the
// session to see whether the flush was stored. logtool exits 2 on it.
var ErrUnavailable = errors.New("handle: store unavailable, retry later")
