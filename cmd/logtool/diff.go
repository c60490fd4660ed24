package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"

	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

func (a *app) newDiffCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "diff [--json] A B",
		Short: "Compare two sessions' logical logs; exit 1 if they differ",
		Long: `Diff compares the logical logs of sessions A and B (IDs, names or files; a
fork's inherited events included) event by event, as canonical bytes
(docs/format.md §6), and prints the first seq where they differ and the
event each side holds there (none when that log ends before it). Headers
are not compared. JSON: {"firstDiff","a","b","lenA","lenB"}, firstDiff, a
and b null when the logs are identical. Exit 0 when identical, 1 when they
differ.`,
		Example: `  $ logtool diff agent=coder fork.jsonl
  first difference at seq 7 (a: 8 events, b: 9 events)
  a      7  2025-11-29T21:00:09.000Z  turn/start            {"input":"parent"}
  b      7  2025-11-29T21:00:20.000Z  turn/start            {"input":"fork"}`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runDiff(cmd.Context(), args[0], args[1], a.wantJSON(asJSON), a.stdout)
		},
	}
	jsonFlag(cmd, &asJSON)
	return cmd
}

// diffResult is what `logtool diff --json` prints.
type diffResult struct {
	FirstDiff *int64          `json:"firstDiff"`
	A         json.RawMessage `json:"a"` // canon(e), or null
	B         json.RawMessage `json:"b"`
	LenA      int64           `json:"lenA"`
	LenB      int64           `json:"lenB"`
}

// diffSide is one of the two logs diff reads.
type diffSide struct {
	h    handle.Handle
	last int64 // the log's last seq when it was opened
}

func (a *app) openDiffSide(ctx context.Context, arg string) (diffSide, error) {
	_, h, err := a.openArg(ctx, arg)
	if err != nil {
		return diffSide{}, err
	}
	return diffSide{h: h, last: h.Seq()}, nil
}

func (a *app) runDiff(ctx context.Context, argA, argB string, asJSON bool, out io.Writer) error {
	sa, err := a.openDiffSide(ctx, argA)
	if err != nil {
		return err
	}
	defer sa.h.Close()
	sb, err := a.openDiffSide(ctx, argB)
	if err != nil {
		return err
	}
	defer sb.h.Close()

	res := diffResult{LenA: sa.last + 1, LenB: sb.last + 1}
	ea, eb, at, err := firstDifference(ctx, sa, sb)
	if err != nil {
		return err
	}
	if at >= 0 {
		res.FirstDiff = &at
		if ea != nil {
			res.A = eventlog.Canon(*ea)
		}
		if eb != nil {
			res.B = eventlog.Canon(*eb)
		}
	}
	if asJSON {
		err = writeJSON(out, res)
	} else {
		err = writeDiffHuman(out, res, ea, eb)
	}
	if err != nil {
		return err
	}
	if at >= 0 {
		return failedf("%s and %s differ from seq %d", argA, argB, at)
	}
	return nil
}

// firstDifference reads both logs in step and returns the first seq where
// their canonical bytes differ (-1 when they are identical) and the event
// each side holds there (nil when its log ended before it).
func firstDifference(ctx context.Context, sa, sb diffSide) (ea, eb *eventlog.Event, at int64, err error) {
	nextA, stopA := iter.Pull2(sa.h.Read(ctx, 0, sa.last))
	defer stopA()
	nextB, stopB := iter.Pull2(sb.h.Read(ctx, 0, sb.last))
	defer stopB()
	var ca, cb []byte
	for seq := int64(0); ; seq++ {
		a, errA, okA := nextA()
		if okA && errA != nil {
			return nil, nil, -1, errA
		}
		b, errB, okB := nextB()
		if okB && errB != nil {
			return nil, nil, -1, errB
		}
		switch {
		case !okA && !okB:
			return nil, nil, -1, nil
		case !okA:
			return nil, &b, seq, nil
		case !okB:
			return &a, nil, seq, nil
		}
		ca, cb = eventlog.AppendCanon(ca[:0], a), eventlog.AppendCanon(cb[:0], b)
		if !bytes.Equal(ca, cb) {
			return &a, &b, seq, nil
		}
	}
}

// writeDiffHuman says whether the logs are identical, or where they first
// differ and what each side holds there.
func writeDiffHuman(w io.Writer, res diffResult, ea, eb *eventlog.Event) error {
	if res.FirstDiff == nil {
		_, err := fmt.Fprintf(w, "identical: %s\n", plural(res.LenA, "event"))
		return err
	}
	if _, err := fmt.Fprintf(w, "first difference at seq %d (a: %s, b: %s)\n", *res.FirstDiff, plural(res.LenA, "event"), plural(res.LenB, "event")); err != nil {
		return err
	}
	for _, side := range []struct {
		name string
		e    *eventlog.Event
		n    int64
	}{{"a", ea, res.LenA}, {"b", eb, res.LenB}} {
		if _, err := fmt.Fprintf(w, "%s ", side.name); err != nil {
			return err
		}
		if side.e == nil {
			if _, err := fmt.Fprintf(w, "     -  (none: its log ends at seq %d)\n", side.n-1); err != nil {
				return err
			}
			continue
		}
		if err := writeEventHuman(w, *side.e); err != nil {
			return err
		}
	}
	return nil
}
