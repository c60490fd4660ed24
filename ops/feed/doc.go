// Package feed is the append protocol of logtool append, for any host
// that takes events from a program in another language (logtool append
// over stdin, serve, a socket): event objects one a line in, and after
// each durable flush an acknowledgement line out.
//
//	in:  {"type":"user/message","data":{"text":"hi"}}     time defaults to now; "seq" asks for that seq
//	out: {"acked":0}                                        the last durable seq
//	out: {"error":{"kind":"conflict","line":2,"message":"seq 9 is not the next seq 1"}}
//
// Run flushes every N events (FlushEvery), whenever the input holds no
// further complete line (so an ack never waits for more input) and at
// its end. A line that is not a valid event object (ParseLine) or asks for
// a seq that is not the next one ends the input: what came before is
// flushed and acknowledged, the error line is written and nothing of that
// line is appended. A line is at most MaxLine bytes; a longer one is
// refused without being held.
//
// It knows handle.Handle and eventlog; it knows no command line, no file
// and no store.
package feed
