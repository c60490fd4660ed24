// Package follow follows a session as a writer appends to it, the way
// tail -F follows a file: it yields the events appended since the last
// look and goes on across what a store does to a session's log under a
// reader — a convert or a compaction that replaces the file (or moves it
// to another name), a repair or a writer's recovery that cuts it, a
// rewrite in place, a session gone for a while, a JetStream subject
// rewritten by a detach. After each it opens the session anew and goes on
// from the first event it has not yielded, or, when the log now differs
// from what it yielded (it was cut, and perhaps written again), from the
// first seq where it differs; it says what happened in a Note.
//
//	f, err := follow.Open(ctx, follow.Session(st, w.ID()), follow.From(0),
//		follow.WithNotes(func(n follow.Note) { fmt.Println("note:", n) }))
//	...
//	defer f.Close()
//	look := func() {
//		for e, err := range f.Poll(ctx) {
//	...
//		fmt.Println("-- flush")
//	}
//
// and the caller calls look once a tick (tail -f looks every 200 ms).
//
// It tells what changed from the store's Stat of the session (its path,
// size and last event) and from the events it yielded (their digests,
// kept for the last 1,024), so it works on every store through
// handle.Store alone. logtool tail -f uses it, and a page that follows a
// session can (one Poll a look, then a flush). A Follower is not safe for
// concurrent use.
package follow
