package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/app/chatview"
	"github.com/sessionlog/sessionlog/ops/inspect"
	"github.com/sessionlog/sessionlog/ops/storeurl"
)

// catOptions are the flags of `logtool cat`.
type catOptions struct {
	json    bool
	from    int64
	to      int64
	types   []string
	salvage bool
}

func (a *app) newCatCmd() *cobra.Command {
	var o catOptions
	cmd := &cobra.Command{
		Use:   "cat [--json] [--from S] [--to S] [--type T]... SESSION",
		Short: "Print the events of a session (--json: canonical rows)",
		Long: `Cat prints the events of a session's logical log, a fork's inherited events
first: with --json (and piped) each line is canon(e), byte for byte
(docs/format.md §6); on a terminal one line an event: seq, time (RFC 3339,
UTC), type, and the data cut to 100 characters. --from and --to bound the
seqs, --type (repeatable) the types; a type no event has and the library
does not know is warned about, with the nearest one (a typo). A torn tail
is not shown and is noted on stderr.

On a damaged log cat prints the events before the first damage, then the
error (file, offset, seq, the fix) on stderr, and exits 1. It checks the
log digest of every checkpoint it passes (it reads from the first event
whatever --from says): a mismatch is reported on stderr, exit 1, after the
events. A fork whose parent is gone can still be read from past its fork
point (--from), with a note that the digests were not checked.

--salvage reads past damage, for inspection: every event it can decode is
printed and each skipped range reported on stderr with the seqs lost; it
changes nothing, and exits 1 when a range was skipped.`,
		Example: `  $ logtool cat --json --from 1 01JDX3N0
  {"seq":1,"type":"user/message","time":1764450000100,"data":{"text":"hi"}}
  $ logtool cat --type tool/call agent=coder`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("to") {
				o.to = handle.End
			}
			o.json = a.wantJSON(o.json)
			return a.runCat(cmd.Context(), args[0], o, a.stdout)
		},
	}
	fl := cmd.Flags()
	jsonFlag(cmd, &o.json)
	seqFlag(fl, &o.from, "from", "first seq to print (inclusive)")
	seqFlag(fl, &o.to, "to", "last seq to print (inclusive; default: the last event)")
	fl.StringArrayVar(&o.types, "type", nil, "print only events of type `T` (repeatable)")
	fl.BoolVar(&o.salvage, "salvage", false, "read the file past damage, reporting each skipped range on stderr")
	return cmd
}

func (a *app) runCat(ctx context.Context, arg string, o catOptions, out io.Writer) error {
	if o.from < 0 || o.to < 0 {
		return usageErrorf("--from and --to take seqs >= 0")
	}
	for _, t := range o.types {
		if err := eventlog.ValidateType(t); err != nil {
			return usageErrorf("--type %q: %v", t, err)
		}
	}
	s, err := a.resolve(arg)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(out, 64<<10)
	var buf []byte
	types := newTypeFilter(o.types)
	defer func() {
		for _, m := range types.warnings() {
			a.note("%s", m)
		}
	}()
	print := func(e eventlog.Event) error {
		if !types.keep(e.Type) || e.Seq < o.from || e.Seq > o.to {
			return nil
		}
		if !o.json {
			return writeEventHuman(w, e)
		}
		buf = append(eventlog.AppendCanon(buf[:0], e), '\n')
		_, err := w.Write(buf)
		return err
	}
	if o.salvage {
		err = a.salvage(ctx, s, print)
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
		return err
	}
	// inspect.Read reads from the first event, so that every checkpoint
	// passed is checked, and shows a damaged log's events before its
	// damage (docs/cli.md).
	r := inspect.NewRead(s.log, o.from, o.to)
	for e, rerr := range r.Events(ctx) {
		if err = rerr; err == nil {
			err = print(e)
		}
		if err != nil {
			break
		}
	}
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	a.noteTorn(r.Path, r.Torn, "not read")
	if r.Unchecked != nil {
		// A fork whose parent is gone: its own events can still be read,
		// but not the digests, which cover the parent's too.
		a.note("checkpoint digests not checked: %s", r.Unchecked.Error())
	}
	for _, m := range r.Mismatches {
		a.note("%s", m.Error())
	}
	if err == nil && len(r.Mismatches) > 0 {
		err = failedf("%s do not match the events before them (logtool verify checks them all)",
			chatview.Plural(int64(len(r.Mismatches)), "checkpoint digest", ""))
	}
	return err
}

// salvage prints what can be read of the log past its damage (a fork's
// inherited events first) and reports every skipped range on stderr.
func (a *app) salvage(ctx context.Context, s session, fn func(eventlog.Event) error) error {
	res, err := s.log.Salvage(ctx, fn)
	if errors.Is(err, inspect.ErrNotFiles) {
		return usageErrorf("cat --salvage reads log files; %s is not one (docs/distributed.md)", s.path)
	}
	if err != nil {
		return err
	}
	for _, k := range res.Skips {
		lost := "no seqs lost"
		switch {
		case k.LastLost < 0:
			lost = fmt.Sprintf("seqs from %d on lost", k.FirstLost)
		case k.FirstLost <= k.LastLost:
			lost = seqsWords(k.FirstLost, k.LastLost) + " lost"
		}
		fmt.Fprintf(a.stderr, "logtool: salvage: skipped %s at offset %d (%s): %s\n", plural(k.Bytes, "byte"), k.Offset, lost, k.Reason)
	}
	if t := res.Torn; t != nil {
		fmt.Fprintf(a.stderr, "logtool: salvage: torn tail of %s at offset %d dropped\n", plural(t.Bytes, "byte"), t.Offset)
	}
	if len(res.Skips) > 0 {
		// What was printed is all that could be read, but the log is not
		// clean: exit 1, as for any failed check.
		return failedf("salvage: %s skipped", plural(int64(len(res.Skips)), "damaged range"))
	}
	return nil
}

func (a *app) newStatCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stat [--json] SESSION",
		Short: "Describe a session: header, last row, open turn and how it stopped",
		Long: `Stat describes a session from its header and its last row, and reads its
tail backward (along the live branch) for the stop facts; the rest of the
log is neither read nor checked (verify checks it). JSON:
{"id","path","encoding","createdAt","parent","labels","events","lastSeq",
"lastType","lastTime","sizeBytes","openTurn","stop"}. events counts the
logical log (a fork's inherited events included); lastSeq is -1 for an
empty log; lastType and lastTime are null when the file holds no event of
its own; parent is null or {"id","seq","mode","call"?}; openTurn says the
last turn/start has no turn/end (resume closes it); stop is
{"seq","kind","reason","verdict":{"resumable","reason"}}: the last turn/end
(seq null before any) and whether the session may continue (deny by
default: failed, budget and unknown kinds may not).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runStat(cmd.Context(), args[0], a.wantJSON(asJSON), a.stdout)
		},
	}
	jsonFlag(cmd, &asJSON)
	return cmd
}

func (a *app) runStat(ctx context.Context, arg string, asJSON bool, out io.Writer) error {
	s, err := a.resolve(arg)
	if err != nil {
		return err
	}
	info, facts, err := inspect.Facts(ctx, s.log)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(out, inspect.NewStatReport(info).WithFacts(facts))
	}
	return writeStatHuman(out, info, facts)
}

func (a *app) newLsCmd() *cobra.Command {
	var asJSON, tree bool
	var lo lsOptions
	cmd := &cobra.Command{
		Use:   "ls [--json] [--wide] [--label k=v]... [--since D] [--limit N [--before CURSOR]] [--tree] [DIR]",
		Short: "List a store's sessions, the last active first, or as a tree of forks",
		Long: `Ls lists the sessions of DIR, a folder or a store URL (default: the
store), the last active first:
on a terminal a table that fits the width (ID, last activity as an age, the
later of the last event's time and the creation; events; size; labels, a
fork or child marked (fork@S) or (child@S), cut to fit), --wide every
column in full (creation time, last type, size in bytes, parent); JSON: one
stat object a session, without openTurn and stop. --label k=v (repeatable)
keeps the sessions whose labels hold every pair; --since D those active
within D (90m, 12h, 30d).

--limit N lists a page: the first N. Under a full page ls prints "next
page: --before CURSOR" (JSON: each object's "cursor"); --before CURSOR
lists the page after it. On a folder the first page costs the same at a
thousand sessions and at a million (docs/design.md, "The session index").

--tree shows the forest: roots oldest first, each fork and child indented
under its parent with its mode (fork@S, child@S and its call), event
count, age and labels; a session whose parent is gone is a root marked
"(parent ID gone)". JSON adds "depth" (0 for a root) and "parentGone". The
filters and --wide do not go with --tree.

A session that cannot be read (or is not a regular file) is reported on
stderr, the others are listed, and the exit status is 1.`,
		Example: `  $ logtool ls --label source=claude --since 7d
  $ logtool ls --limit 50
  $ logtool ls --tree`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, explicit := a.dir, len(args) == 1
			if explicit {
				dir = args[0]
			}
			if err := lo.parse(tree); err != nil {
				return err
			}
			if tree {
				return a.runLsTree(cmd.Context(), dir, explicit, a.wantJSON(asJSON), a.stdout)
			}
			return a.runLs(cmd.Context(), dir, explicit, a.wantJSON(asJSON), lo, a.stdout)
		},
	}
	jsonFlag(cmd, &asJSON)
	cmd.Flags().BoolVar(&tree, "tree", false, "show forks and children under their parents")
	lo.flags(cmd)
	return cmd
}

func (a *app) runLs(ctx context.Context, dir string, explicit, asJSON bool, lo lsOptions, out io.Writer) error {
	st, err := a.listed(ctx, dir, explicit)
	if err != nil {
		return err
	}
	infos, broken, err := inspect.List(ctx, st, lo.listOptions()...)
	if err != nil {
		return err
	}
	full := lo.limit > 0 && len(infos) == lo.limit // a page, maybe not the last
	infos = a.filterSince(infos, lo)
	full = full && len(infos) == lo.limit
	paged := lo.limit > 0 || lo.cursor != nil
	if asJSON {
		for _, info := range infos {
			r := inspect.NewStatReport(info)
			if paged {
				r.Cursor = info.Cursor().String()
			}
			if err := writeJSON(out, r); err != nil {
				return err
			}
		}
	} else if err := a.writeLsTable(out, infos, lo.wide); err != nil {
		return err
	} else if full {
		fmt.Fprintf(out, "next page: --before %s\n", infos[len(infos)-1].Cursor())
	}
	for _, b := range broken {
		fmt.Fprintf(a.stderr, "logtool: %s\n", oneLine(b.Error()))
	}
	if len(broken) > 0 {
		return brokenErr(broken, fmt.Sprintf("%d of %s in %q could not be read", len(broken), plural(int64(len(broken)+len(infos)), "session"), dir))
	}
	return nil
}

// listed is the store ls lists: the one DIR names on the command line (a
// folder, which must be there, or a store URL), or the store in use.
func (a *app) listed(ctx context.Context, dir string, explicit bool) (handle.Store, error) {
	if !explicit {
		return a.sessions(ctx)
	}
	st, closeFn, err := a.openStoreURL(ctx, dir, storeurl.Existing())
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, closeFn)
	return st, nil
}
