// Package web is the HTTP side of `logtool serve`: a read-only, local web
// view of a session store (docs/cli.md, serve). It renders the session list,
// a session's conversation with its branches, the diff of two sessions or
// two seqs, events as stored, verify results and a live view that follows a
// session with the follower tail -f uses (package follow), with
// html/template (every piece of event data is
// escaped) and a little plain JavaScript, all embedded. What a page shows of
// the events is what logtool show shows: both fold them with
// internal/app/chatview's Builder.
//
// It reads sessions through a handle.Store (serve gives it a file store
// over a read-only file system) and only ever opens them read-only; a URL
// may name a session as the command line does (handle.Resolve), answered
// with a redirect to its ID. /api/ answers with what the CLI prints as JSON
// (ls, ls --tree, stat, verify, replay) from the same library calls and
// report types (inspect.StatReport and TreeReport, verify.Report), encoded
// as the CLI encodes them. Every request must carry the server's
// token and a Host naming the bound address, and only GET and HEAD are
// served.
//
// It knows nothing of flags, of how the store is found or of cobra: that
// is cmd/logtool's. A Server is safe for concurrent use.
package web
